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
_NAME = r"[A-Z][\w.'\u2019-]*(?:[ -][A-Z][\w.'\u2019-]*)*(?:,\s*[A-Z]{2}\b)?"
# "in Seattle, Boston and Gotham": the names listed after a preposition, known or not.
_LISTED = re.compile(rf"\b(?:in|at|for)\s+(?P<names>{_NAME}(?:\s*(?:,|and|&|or|vs\.?|versus)\s*{_NAME})+)")
_SEPARATOR = re.compile(r"\s*(?:,(?!\s*[A-Z]{2}\b)|\band\b|&|\bor\b|\bvs\.?|\bversus\b)\s*")


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


def extract_cities(question: str) -> list[str]:
    """Every city a question names, in the order written ("Seattle", "Boston", "Gotham").

    Known cities are found as `extract_city` finds one; a name listed with them after
    "in/at/for" that the table does not know is kept as typed, so the server can say it is
    not a US city it knows instead of the answer silently leaving it out.
    """
    words = [(m.group(0).rstrip(".,"), m.start(), m.end()) for m in _WORD.finditer(question)]
    t = table()
    found: list[tuple[int, int, str]] = []
    i = 0
    while i < len(words):
        for n in range(min(_MAX_WORDS, len(words) - i), 0, -1):
            phrase = question[words[i][1] : words[i + n - 1][2]].rstrip(".,?!")
            key = normalize(phrase)
            if (n == 1 and key in _NOT_CITIES) or not t.lookup(phrase):
                continue
            after_prep = i > 0 and words[i - 1][0].lower() in _PREPOSITIONS
            listed = bool(found) and re.fullmatch(r"\s*(?:,|and|&|or)\s*", question[found[-1][1] : words[i][1]] or "x")
            if not (phrase[0].isupper() or key in ALIASES or after_prep or listed):
                continue
            state, used = _state_after(question, words, i + n)
            if state and t.lookup(phrase, state):
                phrase = f"{phrase}, {state}"
            end = words[i + n - 1 + used][2] if used else words[i + n - 1][2]
            found.append((words[i][1], end, phrase))
            i += n + used - 1
            break
        i += 1
    for m in _LISTED.finditer(question):
        start = m.start("names")
        for part in _SEPARATOR.split(m.group("names")):
            name = part.strip()
            at = question.find(name, start)
            start = at + len(name)
            if name and not any(a <= at < b for a, b, _ in found):
                found.append((at, at + len(name), name))
    if not found:
        one = extract_city(question)
        return [one] if one else []
    return list(dict.fromkeys(name for _, _, name in sorted(found)))
