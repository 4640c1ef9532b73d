"""Does a question name a term? Word-level matching with plurals and (optionally) typos.

Shared by the router (which terms that agents hold does a question name: exact words,
fast enough to run on every question) and by packs that read questions against their
data (column names, category values: near words allowed).
"""

from __future__ import annotations

import difflib
import re

_WORD = re.compile(r"[a-z0-9][a-z0-9'_-]*")
NEAR = 0.84  # difflib ratio from which a word counts as the same word (a typo, a variant)


def words(text: str) -> list[str]:
    """Lower-case words of `text` ("Q3 Sales" → ["q3", "sales"])."""
    return _WORD.findall(text.lower())


def stem(word: str) -> str:
    """A plural's singular, roughly: "industries" → "industry", "classes" → "class", "sales" → "sale"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def stems(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


def word_score(word: str, tokens: list[str]) -> float:
    """1.0 when `word` is one of `tokens`, 0.99 up to a plural, else the best difflib ratio."""
    if word in tokens:
        return 1.0
    root = stem(word)
    if any(stem(t) == root for t in tokens):
        return 0.99
    if len(word) < 4:
        return 0.0
    return max((difflib.SequenceMatcher(None, word, t).ratio() for t in tokens if len(t) >= 3), default=0.0)


def named(question_stems: set[str], term: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether every word of `term` (but those in `ignore`) is in the question (up to plurals)."""
    term_words = [stem(w) for w in words(term) if w not in ignore]
    return bool(term_words) and all(w in question_stems for w in term_words)


def masked(text: str, terms: list[str]) -> str:
    """`text` with every word of `terms` (up to plurals) replaced by X, runs of X made one: what a
    question asks of the data, without what the data is about ("average fertility rate by
    country" → "average X by X")."""
    if not terms:
        return text
    hidden = {stem(w) for term in terms for w in words(term)}
    out: list[str] = []
    for token in re.findall(r"[A-Za-z0-9][A-Za-z0-9'_-]*|[^\sA-Za-z0-9]+", text):
        word = token.lower().removesuffix("'s")
        if stem(word) in hidden or word in hidden:
            if not out or out[-1] != "X":
                out.append("X")
        else:
            out.append(token)
    return " ".join(out)


class TermIndex:
    """Which of many terms a question names (`named` for each term, as one lookup).

    Built once per set of terms (a linear pass), so that asking costs what the question's
    words find, not the number of terms: a table of 10,000 columns must not make every routed
    question read 10,000 terms. Each term is filed under its rarest word; a question finds the
    terms filed under its own words and keeps those whose every word it names.
    """

    def __init__(self, terms: tuple[str, ...]) -> None:
        self.terms = terms
        self._words = [frozenset(stem(w) for w in words(t)) for t in terms]
        counts: dict[str, int] = {}
        for found in self._words:
            for word in found:
                counts[word] = counts.get(word, 0) + 1
        self._filed: dict[str, list[int]] = {}
        for position, found in enumerate(self._words):
            if found:
                self._filed.setdefault(min(found, key=lambda w: (counts[w], w)), []).append(position)

    def named(self, question_stems: set[str]) -> list[str]:
        """The terms the question names (see `named`), in the order they were given."""
        hits = [
            position
            for word in question_stems
            for position in self._filed.get(word, ())
            if self._words[position] <= question_stems
        ]
        return [self.terms[position] for position in sorted(hits)]
