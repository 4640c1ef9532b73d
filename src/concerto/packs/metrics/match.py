"""Find the metric a question means: by exact name, else by meaning.

Meaning is the cosine similarity of local sentence embeddings between the question
and (a) the everyday concepts available on this server, (b) metric names with their
help text. Embedding a thousand help texts would take seconds, so a cheap word
overlap first keeps the few dozen metrics worth embedding; the embedder caches each
text, so a warm question costs one embedding.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from concerto.packs.metrics.promql import CONCEPTS, METRIC_TOKEN, Concept

if TYPE_CHECKING:
    import numpy as np

    from concerto.nlp.embeddings import Embedder
    from concerto.packs.metrics.backend import MetricInfo


class TextEmbedder(Protocol):
    """Anything with `embed(texts)` returning unit vectors (an embedder, or its disk cache)."""

    def embed(self, texts: list[str]) -> np.ndarray: ...


MIN_SIMILARITY = 0.30
# Below this the question is about nothing any metric describes: a parsing error,
# not a missing metric.
UNRELATED_SIMILARITY = 0.15
# Concepts are curated and compute the right expression (a busy fraction, not a raw
# counter), so at equal similarity they should win over a raw metric.
CONCEPT_BONUS = 0.08
PREFILTER = 16
_STOP = frozenset(
    re.findall(
        r"\w+",
        """
        show me the a an of for in on over what whats is was are how much many give get tell about
        and to with my our please last past hour hours minute minutes day days week weeks since
        ago average avg mean max maximum min minimum peak total sum current now by per at during
        from between today yesterday it be been has have
        """,
    )
)
_SUFFIXES = ("ing", "ed", "es", "s")
# Words that say nothing about which quantity is meant: fillers, hosts, counts, ranking and
# comparison words. A question's other words must each be explained by the metric chosen
# (see `unexplained`); these never need to be.
GENERIC = frozenset(
    _STOP
    | set(
        re.findall(
            r"\w+",
            """
            lately recently recent currently all every each any overall whole entire server servers host hosts
            machine machines system systems box instance instances node nodes target level levels value values
            number count amount stats statistic statistics metric metrics data graph chart plot trend show display
            give get tell list see look check find report need want know run running ran do did does doing happen
            happened like please thank thanks could would should can will much many we our us you your there here
            which who where when why this that these those was were being take go going compared compare vs versus
            against than difference change changed same higher lower more less increase decrease grown grew top
            bottom highest lowest most least largest smallest biggest busiest idlest breakdown broken down split
            grouped across p50 p90 p95 p99 percentile median 50th 90th 95th 99th latest seconds second minutes
            minute hours hour days day weeks week months month quarter quarters year years time so far now
            ago earlier before later previous
            """,
        )
    )
)
EXPLAIN_SIMILARITY = 0.25
"""A question word the chosen metric's text does not contain is still explained by it when the
word alone is at least this similar to that text ("utilisation" and "CPU ... utilization");
"temperature" against CPU usage is about 0.03, "GPU" against memory use 0.2."""
ALTERNATIVE_MARGIN = 0.15
"""How far below the best match another candidate may score and still be chosen because it
explains every word of the question when the best does not."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A concept or metric the question may mean, with its similarity and the text it was matched by."""

    name: str
    score: float
    concept: Concept | None = None
    similarity: float = 0.0  # the cosine alone, without the concept bonus
    text: str = ""


_IRREGULAR = {"sent": "send", "written": "write", "wrote": "write", "spent": "spend", "ran": "run"}


def _stem(word: str) -> str:
    """A crude stem: British spellings as American, a few irregular verbs, common suffixes
    and a final e ("received" and "receive" both "receiv")."""
    word = _IRREGULAR.get(word, word)
    word = word.replace("isation", "ization").replace("ising", "izing").replace("ised", "ized")
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


@lru_cache(maxsize=8192)
def _words(text: str) -> frozenset[str]:
    raw = re.findall(r"[a-z0-9]+", text.lower().replace("_", " "))
    return frozenset(_stem(w) for w in raw if w not in _STOP and len(w) > 1)


def words(text: str) -> set[str]:
    """Content words of a text, crudely stemmed; metric names split on underscores."""
    return set(_words(text))


def describe_metric(info: MetricInfo) -> str:
    """The text a metric is matched by: its name in words and (the start of) its help text."""
    name = info.name.replace("_", " ").replace(":", " ")
    return f"{name}: {info.help[:120]}" if info.help else name


def explicit_metric(question: str, catalog: Mapping[str, MetricInfo]) -> tuple[str | None, str | None]:
    """(metric named exactly in the question, a metric-like word that does not exist)."""
    unknown = None
    for token in METRIC_TOKEN.findall(question):
        if token in catalog:
            return token, None
        for suffix in ("_bucket", "_count", "_sum"):
            base = token.removesuffix(suffix)
            if base != token and base in catalog:
                return base, None
        unknown = unknown or token
    return None, unknown


def closest_names(name: str, catalog: Sequence[str], n: int = 3) -> list[str]:
    """Metric names spelled closest to `name`, for a metric_not_found suggestion."""
    return difflib.get_close_matches(name, list(catalog), n=n, cutoff=0.4)


def _prefilter(question_words: set[str], catalog: Mapping[str, MetricInfo]) -> list[MetricInfo]:
    scored: list[tuple[float, str]] = []
    for name, info in catalog.items():
        if name.endswith(("_bucket", "_count", "_sum")) and name.rsplit("_", 1)[0] in catalog:
            continue  # the family's base name stands for it
        overlap = question_words & _words(describe_metric(info))
        if overlap:
            scored.append((len(overlap) / math.sqrt(len(_words(name)) + 1), name))
    scored.sort(key=lambda item: (-item[0], len(item[1]), item[1]))
    return [catalog[name] for _, name in scored[:PREFILTER]]


def rank(
    question: str,
    catalog: Mapping[str, MetricInfo],
    embedder: Embedder,
    limit: int = 5,
    candidates: TextEmbedder | None = None,
) -> list[Candidate]:
    """Concepts available on this server and metrics, best match first.

    `candidates` embeds the concept and metric texts (a disk-backed cache in the node);
    the question itself goes to `embedder`.
    """
    concepts = [c for c in CONCEPTS if c.resolve(catalog) is not None]
    metrics = _prefilter(words(question), catalog)
    texts = [c.description for c in concepts] + [describe_metric(m) for m in metrics]
    scores = (candidates or embedder).embed(texts) @ embedder.embed([question])[0]
    out = [
        Candidate(c.key, float(v) + CONCEPT_BONUS, c, float(v), c.description)
        for c, v in zip(concepts, scores[: len(concepts)], strict=True)
    ]
    out += [
        Candidate(m.name, float(v), None, float(v), describe_metric(m))
        for m, v in zip(metrics, scores[len(concepts) :], strict=True)
    ]
    out.sort(key=lambda c: -c.score)
    return out[:limit]


def _raw_words(text: str) -> dict[str, str]:
    """Content words of `text`: stem -> the word as written (the first time)."""
    out: dict[str, str] = {}
    for raw in re.findall(r"[a-z0-9]+", text.lower().replace("_", " ")):
        stem = _stem(raw)
        if raw not in GENERIC and stem not in GENERIC and len(raw) > 1 and not raw.isdigit():
            out.setdefault(stem, raw)
    return out


def content_words(text: str) -> list[str]:
    """The words of `text` that say which quantity is meant (not fillers, hosts, counts or numbers)."""
    return list(_raw_words(text).values())


def unexplained(
    phrase: str,
    candidate: Candidate,
    embedder: Embedder,
    candidates: TextEmbedder | None = None,
    ignore: frozenset[str] = frozenset(),
) -> list[str]:
    """Words of `phrase` that `candidate` does not measure: neither in its text nor close to it.

    "temperature of the CPU" matched to CPU usage leaves "temperature"; answering CPU usage
    would answer another question, so the caller says the metric is not there instead.
    Words in `ignore` (what is ranked or broken down: "modes", "hosts") need no explaining.
    """
    have = words(candidate.text) | words(candidate.name)
    wanted = {stem: raw for stem, raw in _raw_words(phrase).items() if stem not in have and raw not in ignore}
    if not wanted:
        return []
    raws = list(wanted.values())
    target = (candidates or embedder).embed([candidate.text])[0]
    sims = embedder.embed(raws) @ target
    return [raw for raw, sim in zip(raws, sims, strict=True) if float(sim) < EXPLAIN_SIMILARITY]


def choose(
    phrase: str,
    ranked: Sequence[Candidate],
    embedder: Embedder,
    candidates: TextEmbedder | None = None,
    ignore: frozenset[str] = frozenset(),
) -> tuple[Candidate | None, list[str]]:
    """The best candidate that explains every word of `phrase`, and the words the best one
    leaves unexplained when none does (a metric this server does not have)."""
    if not ranked:
        return None, []
    best = ranked[0]
    missing_words = unexplained(phrase, best, embedder, candidates, ignore)
    if not missing_words:
        return best, []
    for other in ranked[1:]:
        if other.score < MIN_SIMILARITY or best.score - other.score > ALTERNATIVE_MARGIN:
            break
        if not unexplained(phrase, other, embedder, candidates, ignore):
            return other, []
    return None, missing_words
