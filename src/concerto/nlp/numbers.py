"""Counts written as words ("previous four months", "past thirty minutes"), shared by packs."""

from __future__ import annotations

NUMBER_WORDS: dict[str, int] = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "eighteen": 18,
    "twenty": 20,
    "twenty-four": 24,
    "thirty": 30,
    "forty-five": 45,
    "sixty": 60,
    "ninety": 90,
}


def number_words_pattern(extra: dict[str, int] | None = None) -> str:
    """A regex alternation of the words, longest first so "twenty-four" wins over "twenty"."""
    words = {**NUMBER_WORDS, **(extra or {})}
    return "|".join(sorted(words, key=len, reverse=True))


def word_number(text: str, extra: dict[str, int] | None = None) -> int | None:
    """The number a word names, or None."""
    key = text.lower()
    return (extra or {}).get(key, NUMBER_WORDS.get(key))
