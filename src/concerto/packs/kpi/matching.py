"""KPI and department names found in a question by spelling first, then by meaning.

A name written as stored ("home-loan", "attrition rate") is taken as is. Otherwise the
word spans of the question (1 to 3 words, not starting or ending with a filler word)
are embedded in one batch and compared with each stored name's description, so "home
loan team" finds `home-loan` and "employee turnover" finds `attrition-rate`. A name
below the threshold is unknown; the closest stored names become suggestions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder
    from concerto.packs.kpi.catalog import Catalog

THRESHOLD = 0.5
MAX_SPANS = 300
_STOP = {
    "a",
    "an",
    "the",
    "of",
    "for",
    "in",
    "on",
    "at",
    "to",
    "from",
    "by",
    "and",
    "or",
    "what",
    "was",
    "is",
    "were",
    "are",
    "how",
    "show",
    "me",
    "give",
    "tell",
    "did",
    "does",
    "do",
    "our",
    "my",
    "their",
    "its",
    "please",
    "about",
    "with",
    "during",
    "between",
    "over",
    "kpi",
    "department",
    "departments",
    "team",
    "teams",
    "dept",
    "depts",
    "division",
    "divisions",
    "unit",
    "units",
    "value",
    "values",
    "data",
    "trend",
    "much",
    "many",
    "which",
    "whats",
    "what's",
    "has",
    "have",
    "been",
    "s",
    "level",
    "rate",
}
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


@dataclass(frozen=True, slots=True)
class NameMatch:
    """The stored name chosen for one kind, how (exact/semantic) and the runners-up."""

    kind: str
    name: str | None
    score: float
    method: str
    text: str = ""
    suggestions: list[str] = field(default_factory=list)
    span: tuple[int, int] = (0, 0)


def normalize(text: str) -> str:
    """Lower case, one space between words (underscores and slashes count as spaces).

    Character spans of the matchers refer to this form of the text.
    """
    return re.sub(r"[\s_/]+", " ", text.lower())


def _literal(text: str, kind: str, catalog: Catalog) -> tuple[str, tuple[int, int]] | None:
    """The longest stored name (or alias) written in the text: hyphens, spaces, a plural."""
    found = _literals(text, kind, catalog)
    return max(found, key=lambda hit: hit[1][1] - hit[1][0]) if found else None


def _literals(text: str, kind: str, catalog: Catalog) -> list[tuple[str, tuple[int, int]]]:
    """Every stored name (or alias) written in the text, longest first, none overlapping.

    Looks up each run of 1 to 5 words in the catalog's table of written forms, so the cost
    does not grow with the number of stored names.
    """
    forms = catalog.forms.get(kind, {})
    words = [(m.group(0), m.span()) for m in re.finditer(r"[a-z0-9]+", text)]
    found: list[tuple[str, tuple[int, int]]] = []
    for n in range(min(5, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            run = words[i : i + n]
            span = (run[0][1][0], run[-1][1][1])
            if any(span[0] < t[1] and t[0] < span[1] for _, t in found):
                continue
            written = " ".join(w for w, _ in run)
            name = forms.get(written)
            if name is None and written.endswith("s"):
                name = forms.get(written[:-1])
            if name is not None:
                found.append((name, span))
    return found


def _spans(text: str) -> list[tuple[str, tuple[int, int]]]:
    words = [(m.group(0), m.span()) for m in _WORD.finditer(text)]
    spans: list[tuple[str, tuple[int, int]]] = []
    for i in range(len(words)):
        for n in range(1, 4):
            part = words[i : i + n]
            if len(part) < n or part[0][0] in _STOP or part[-1][0] in _STOP:
                continue
            spans.append((text[part[0][1][0] : part[-1][1][1]], (part[0][1][0], part[-1][1][1])))
            if len(spans) >= MAX_SPANS:
                return spans
    return spans


def match_names(
    text: str, catalog: Catalog, embedder: Embedder, kinds: tuple[str, ...] = ("kpi", "department")
) -> dict[str, NameMatch]:
    """The best stored name of each kind in `text` (which should exclude the period)."""
    import numpy as np

    lowered = normalize(text)
    out: dict[str, NameMatch] = {}
    taken: list[tuple[int, int]] = []
    for kind in kinds:
        hit = _literal(lowered, kind, catalog)
        if hit:
            out[kind] = NameMatch(kind, hit[0], 1.0, "exact", lowered[hit[1][0] : hit[1][1]])
            taken.append(hit[1])
    pending = [k for k in kinds if k not in out]
    if not pending:
        return out
    spans = [(s, sp) for s, sp in _spans(lowered) if not any(sp[0] < t[1] and t[0] < sp[1] for t in taken)]
    vectors = embedder.embed([s for s, _ in spans]) if spans else None
    for kind in pending:
        if vectors is None or not catalog.rows(kind):
            out[kind] = NameMatch(kind, None, 0.0, "none", suggestions=catalog.names(kind)[:3])
            continue
        names, sims = catalog.similarity(vectors, kind)  # spans x names
        best_span, best_name = np.unravel_index(int(np.argmax(sims)), sims.shape)
        score = float(sims[best_span, best_name])
        suggestions = [names[int(i)] for i in np.argsort(-sims.max(axis=0))[:3]]
        span_text, span = spans[int(best_span)]
        if score >= THRESHOLD:
            out[kind] = NameMatch(kind, names[int(best_name)], score, "semantic", span_text, suggestions)
            taken.append(span)
            keep = [i for i, (_, sp) in enumerate(spans) if not (sp[0] < span[1] and span[0] < sp[1])]
            spans = [spans[i] for i in keep]
            vectors = vectors[keep] if keep else None
        else:
            out[kind] = NameMatch(kind, None, score, "none", span_text, suggestions)
    return out


def closest(name: str, kind: str, catalog: Catalog, embedder: Embedder, k: int = 3) -> list[str]:
    """Stored names of `kind` closest in meaning to `name` (for an unknown name)."""
    import numpy as np

    names, sims = catalog.similarity(embedder.embed([name.replace("-", " ")]), kind)
    return [names[int(i)] for i in np.argsort(-sims[0])[:k]] if names else []


# A second name of a kind, found by meaning, must be closer than the first: "and" lists are
# usually written as stored, and a loose second match would invent a series nobody asked for.
EXTRA_THRESHOLD = 0.6


def match_all(
    text: str,
    catalog: Catalog,
    embedder: Embedder,
    kind: str,
    taken: list[tuple[int, int]],
    *,
    literal: bool = True,
    semantic: bool = True,
    found: list[NameMatch] | None = None,
) -> list[NameMatch]:
    """Every stored name of `kind` the text names ("home-loan and credit-card"), in the order written.

    `text` is normalised (see `normalize`). Names written as stored are taken first; then
    spans not yet taken are matched by meaning, best first, while they clear the threshold.
    After the first name (of this call or of `found`, names of the kind found already), a
    name by meaning must clear `EXTRA_THRESHOLD` and be listed with another ("X and Y").
    `taken` (character spans already used by other names, the period or grammar words) is
    extended with the spans matched here.
    """
    import numpy as np

    out: list[NameMatch] = []
    earlier = list(found or [])
    if literal:
        for name, span in _literals(text, kind, catalog):
            if any(span[0] < t[1] and t[0] < span[1] for t in taken):
                continue
            out.append(NameMatch(kind, name, 1.0, "exact", text[span[0] : span[1]], span=span))
            taken.append(span)
    if semantic:
        spans = [(s, sp) for s, sp in _spans(text) if not any(sp[0] < t[1] and t[0] < sp[1] for t in taken)]
        if spans and catalog.rows(kind):
            names, sims = catalog.similarity(embedder.embed([s for s, _ in spans]), kind)
            chosen = {m.name for m in out + earlier}
            while sims.size:
                best_span, best_name = np.unravel_index(int(np.argmax(sims)), sims.shape)
                score = float(sims[best_span, best_name])
                if score < (EXTRA_THRESHOLD if chosen else THRESHOLD):
                    break
                span_text, span = spans[int(best_span)]
                name = names[int(best_name)]
                if chosen and not _listed(text, span, [m.span for m in out + earlier]):
                    # a second name by meaning only where a list puts it ("X and Y", "X, Y")
                    sims[int(best_span), :] = -1.0
                    continue
                if name not in chosen:
                    out.append(NameMatch(kind, name, score, "semantic", span_text, span=span))
                    chosen.add(name)
                taken.append(span)
                overlapping = [i for i, (_, sp) in enumerate(spans) if sp[0] < span[1] and span[0] < sp[1]]
                sims[overlapping, :] = -1.0
    return sorted(out, key=lambda m: m.span[0])


def _listed(text: str, span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    """Whether only a linking word ("and", ",", "vs" ...) stands between `span` and another name."""
    return any(_LINK.match(text[o[1] : span[0]]) or _LINK.match(text[span[1] : o[0]]) for o in others)


def leftover_words(text: str, taken: list[tuple[int, int]]) -> list[str]:
    """Words of `text` (normalised) outside the taken spans that are not filler words."""
    return [
        m.group(0)
        for m in _WORD.finditer(text)
        if m.group(0) not in _STOP and not any(m.start() < t[1] and t[0] < m.end() for t in taken)
    ]


_LINK = re.compile(r"^\s*(?:,|&|\+|and|or|vs\.?|versus|with|against|plus)\s*(?:the\s+)?$")


def unknown_beside_names(
    text: str, names: list[NameMatch], taken: list[tuple[int, int]]
) -> list[tuple[str, str | None]]:
    """Words listed with the names found ("home-loan and atlantis") that are no known name.

    Such a word is most likely a name the user expects the store to hold; answering the
    others without saying so would be half an answer. A word counts when only a linking
    word ("and", ",", "vs" ...) stands between it and a name (its kind is that name's), or
    when it is written like a stored name (lower-case words joined by hyphens; kind unknown).
    """
    found: dict[str, str | None] = {}
    for m in _WORD.finditer(text):
        word, start, end = m.group(0), m.start(), m.end()
        if word in _STOP or any(start < t[1] and t[0] < end for t in taken):
            continue
        linked = [n.kind for n in names if _LINK.match(text[n.span[1] : start]) or _LINK.match(text[end : n.span[0]])]
        if linked:
            found[word] = linked[0]
        elif "-" in word and not word[0].isdigit():
            found.setdefault(word, None)
    return list(found.items())
