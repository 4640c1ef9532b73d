"""Find the city a question is about (the coordinator side of 002_*.txt's `Query.City`).

Every run of one to five words of the question is looked up in the city table; among
the hits the one after "in/at/for", then the capitalised one, then the longest and the
most populous wins. A state after the name ("Springfield, IL", "Portland Maine") is kept.
With no known city, the words after "in/at/for" are returned as typed so the server can
answer "not a US city I know; did you mean ...".
"""

from __future__ import annotations

import re

from concerto.packs.city.cities import ALIASES, normalize, table

_WORD = re.compile(r"[^\W\d_][\w.'\u2019\u2018\u02bb-]*", re.UNICODE)
_PREPOSITIONS = {"in", "at", "for", "of", "near", "around"}
_AFTER_PREP = re.compile(
    r"\b(?:in|at|for)\s+(?P<name>[A-Z][\w.'\u2019-]*(?:[ -][A-Z][\w.'\u2019-]*)*(?:,\s*[A-Z]{2})?)"
)
# Words that are city names somewhere but almost never mean one in a question.
_NOT_CITIES = {
    "time",
    "weather",
    "temperature",
    "date",
    "now",
    "today",
    "normal",
    "mobile",
    "independence",
    "surprise",
    "commerce",
    "sunrise",
    "orange",
    "temple",
    "enterprise",
    "university",
    "union",
    "center",
    "central",
    "north",
    "south",
    "east",
    "west",
    "deal",
}
_MAX_WORDS = 5


def extract_city(question: str) -> str:
    """The city named in `question` ("Seattle", "Springfield, IL"), or "" if none."""
    words = [(m.group(0).rstrip(".,"), m.start(), m.end()) for m in _WORD.finditer(question)]
    t = table()
    best: tuple[tuple[int, int, int, int], str] | None = None
    for i in range(len(words)):
        for n in range(min(_MAX_WORDS, len(words) - i), 0, -1):
            phrase = question[words[i][1] : words[i + n - 1][2]].rstrip(".,?!")
            key = normalize(phrase)
            if n == 1 and key in _NOT_CITIES:
                continue
            cities = t.lookup(phrase)
            if not cities:
                continue
            state, used = _state_after(question, words, i + n)
            if state and t.lookup(phrase, state):
                phrase = f"{phrase}, {state}"
            after_prep = i > 0 and words[i - 1][0].lower() in _PREPOSITIONS
            capital = phrase[0].isupper() or key in ALIASES
            score = (int(after_prep), int(capital), n + used, cities[0].population)
            if best is None or score > best[0]:
                best = (score, phrase)
            break  # the longest name starting at this word
    if best is not None:
        return best[1]
    m = _AFTER_PREP.search(question)
    return m.group("name") if m else ""


def _state_after(question: str, words: list[tuple[str, int, int]], j: int) -> tuple[str | None, int]:
    """A state code or name right after word `j` ("IL", "Illinois", "New Mexico")."""
    t = table()
    for n in (2, 1):
        if j + n <= len(words):
            text = question[words[j][1] : words[j + n - 1][2]]
            if n == 1 and len(text) == 2 and not text.isupper():
                continue  # "in", "or", "me" are words, not states
            code = t.state_code(text.rstrip(".,?!"))
            if code:
                return code, n
    return None, 0
