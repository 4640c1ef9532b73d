"""Step 1 without an LLM: a deterministic reading of the common metrics questions.

The question is read in layers: what it asks to do (a query, or an analysis this agent
cannot do: anomalies, forecasts, correlations), the windows (and whether two are
compared), a ranking ("top 3 hosts by", "which instance has the highest"), a breakdown
("by instance", "per mode", "for each host"), the statistic, the label filters, and what
remains names the metrics: one, or several joined by "and" or commas, each matched by
exact name or by meaning. A metric phrase whose words the best match does not measure
("temperature of the CPU" against CPU usage) is a metric this server does not have, not a
cue to answer something near it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from concerto.nlp.numbers import number_words_pattern, word_number
from concerto.packs.metrics.models import (
    Aggregation,
    Comparison,
    MetricsQuery,
    MetricsQueryFailure,
    MissingPart,
    Operation,
    Ranking,
    TimeRange,
    time_failure,
)
from concerto.packs.metrics.promql import CONCEPTS_BY_KEY, build_concept, build_metric, ranked
from concerto.packs.metrics.timeparse import (
    COMPARATOR,
    TimeParseError,
    comparison_of,
    default_window,
    duration_text,
    masked,
    read_windows,
)

if TYPE_CHECKING:
    from concerto.nlp.embeddings import Embedder
    from concerto.packs.metrics.backend import MetricInfo
    from concerto.packs.metrics.match import Candidate, TextEmbedder

EXAMPLES = (
    '"Show CPU usage for the last hour", "Memory used on host 127.0.0.1:9100 yesterday", '
    '"CPU usage by instance", "top 3 hosts by memory used", '
    '"CPU now vs the same hour yesterday", "p95 request latency over the past 30 minutes"'
)
MAX_METRICS = 4
"""At most this many metrics are answered from one question."""

_OPERATIONS: tuple[tuple[Operation, re.Pattern[str]], ...] = (
    (
        "anomaly_detection",
        re.compile(r"\b(?:anomal\w*|outliers?|unusual|abnormal\w*|spikes?\s+detect\w*)\b", re.I),
    ),
    (
        "forecast",
        re.compile(
            r"\b(?:forecast\w*|predict\w*|projection|project(?:ed)?\s+(?:growth|usage)|extrapolat\w*|"
            r"will\s+(?:be|reach|run|fill|hit|exceed)|run\s+out|fill\s+up|next\s+(?:hour|day|week|month|"
            r"quarter|year)|tomorrow)\b",
            re.I,
        ),
    ),
    (
        "correlation",
        re.compile(r"\b(?:correlat\w*|covariance|root\s+cause|caus(?:es|ed|ing)\s+by)\b", re.I),
    ),
)
_AGGREGATIONS: tuple[tuple[Aggregation, re.Pattern[str]], ...] = (
    ("p99", re.compile(r"\bp99\b|\b99(?:th)?[\s-]*percentile\b", re.I)),
    ("p95", re.compile(r"\bp95\b|\b95(?:th)?[\s-]*percentile\b", re.I)),
    ("p90", re.compile(r"\bp90\b|\b90(?:th)?[\s-]*percentile\b", re.I)),
    ("p50", re.compile(r"\bp50\b|\b50(?:th)?[\s-]*percentile\b|\bmedian\b", re.I)),
    ("avg", re.compile(r"\b(?:average|avg|mean)\b", re.I)),
    ("max", re.compile(r"\b(?:max|maximum|peak|highest|top)\b", re.I)),
    ("min", re.compile(r"\b(?:min|minimum|lowest)\b", re.I)),
    ("sum", re.compile(r"\b(?:total|sum)\b(?!\s+(?:memory|ram|disk\s+space))", re.I)),
    ("rate", re.compile(r"\brate\s+of\s+change\b|\bper\s+second\b", re.I)),
    ("last", re.compile(r"\b(?:current|currently|right\s+now|latest|at\s+the\s+moment)\b", re.I)),
)

# What people call a label: host → instance, core → cpu, interface → device, ...
LABEL_WORDS: dict[str, str] = {
    word: label
    for label, words in {
        "instance": "host hosts hostname hostnames server servers node nodes machine machines instance instances "
        "target targets box boxes",
        "job": "job jobs service services",
        "cpu": "cpu cpus core cores processor processors",
        "mode": "mode modes cpu_mode cpu_modes",
        "device": "device devices interface interfaces nic nics disk disks network_interface network_interfaces",
        "mountpoint": "mountpoint mountpoints mount_point mount_points filesystem filesystems partition partitions",
        "fstype": "fstype fstypes filesystem_type filesystem_types",
        "code": "code codes status_code status_codes",
        "handler": "handler handlers endpoint endpoints",
    }.items()
    for word in words.split()
}
LABEL_NOUN_WORDS = _LABEL_NOUNS = frozenset(part for word in LABEL_WORDS for part in word.split("_"))
"""Words that name what is ranked or broken down ("modes", "hosts"), not what is measured."""
_LABEL_ALT = "|".join(sorted((w.replace("_", r"\s+") for w in LABEL_WORDS), key=len, reverse=True))
_UNIT_WORDS = frozenset(
    "second seconds sec minute minutes min hour hours day days week weeks month months year years".split()
)
_N = r"(?P<n>\d{1,3}|" + number_words_pattern() + r")"
_TOP_WORDS = r"highest|most\s+busy|most\s+loaded|most|largest|biggest|greatest|heaviest|max(?:imum)?|busiest|hottest"
_BOTTOM_WORDS = r"lowest|least\s+busy|least\s+loaded|least|smallest|fewest|min(?:imum)?|idlest|quietest"
_DIR = rf"(?P<dir>{_TOP_WORDS}|{_BOTTOM_WORDS})"
_ENT = rf"(?P<ent>{_LABEL_ALT})"
_HAVE = r"(?:(?:has|had|have|is|was|are|were|uses|used|use|shows|showed|sees|saw|got)\s+)?"
_RANKINGS: tuple[re.Pattern[str], ...] = (
    # "top 3 hosts by memory used", "bottom 2 cpus by usage", "top 5 by CPU"
    re.compile(
        rf"\b(?P<dir>top|bottom)\s+(?:{_N}\s+)?(?:{_ENT}\s*)?(?:(?:by|in|for|on|of|with)\b|(?=\s*[?.!,;]|\s*$))",
        re.I,
    ),
    # "top 3 racks by CPU": a label the vocabulary does not know (checked against the metric later)
    re.compile(rf"\b(?P<dir>top|bottom)\s+(?:{_N}\s+)?(?P<ent>[a-z_][a-z0-9_]*)\s+by\b", re.I),
    # "which instance has the highest CPU", "which CPU is the busiest"
    re.compile(rf"\b(?:which|what)\s+(?:one\s+of\s+the\s+)?{_ENT}\s+{_HAVE}(?:the\s+)?{_DIR}\b", re.I),
    # "the 2 least busy CPUs", "the 3 busiest hosts"
    re.compile(rf"\b(?:the\s+)?{_N}\s+{_DIR}\s+{_ENT}\b", re.I),
    # "the 3 hosts with the highest memory used", "hosts using the most CPU"
    re.compile(
        rf"\b(?:the\s+)?(?:{_N}\s+)?{_ENT}\s+(?:with|using|that\s+use|having)\s+(?:the\s+)?{_DIR}\b",
        re.I,
    ),
    # "the busiest host", "the least busy CPU"
    re.compile(rf"\b(?:the\s+)?{_DIR}\s+{_ENT}\b", re.I),
)
_BREAKDOWN = re.compile(
    r"\b(?:broken\s+down\s+by|split\s+by|grouped\s+by|break\s*down\s+by|by|per|for\s+each|for\s+every|"
    r"across(?!\s+all\b)|on\s+each|of\s+each|in\s+each|on\s+every|of\s+every|each)\s+(?:the\s+)?"
    rf"(?P<l>(?:{_LABEL_ALT}|[a-z_][a-z0-9_]*)(?:\s*(?:,|and|&)\s*(?:by\s+)?(?:{_LABEL_ALT}|[a-z_][a-z0-9_]*))*)\b",
    re.I,
)
_TIME_HINT = re.compile(
    r"\b(?:hours?|days?|weeks?|months?|quarters?|years?|minutes?|earlier|before|ago|previous|prior|"
    r"(?:19|20|21)\d{2}|q[1-4]|h[12])\b",
    re.I,
)
_ACROSS_ALL = re.compile(rf"\b(?:across|over|for|of|on)\s+all\s+(?:the\s+|of\s+the\s+)?(?:{_LABEL_ALT})\b", re.I)
""""average CPU usage across all hosts": one value over all of them, not a breakdown."""
_FILLER = re.compile(r"(?:\b(?:over|for|in|during|since|from|on|of|at|the|and|with)\b|[\s?.!,;])+", re.I)
# A label value: quoted (spaces allowed), or one token that is not an ordinary word
# ("CPU on the server for the last hour" names no server).
_NOT_A_VALUE = (
    r"(?:for|in|over|during|since|today|yesterday|last|past|the|and|with|from|to|at|on|of|"
    r"this|that|now|right|exporter|is|was|are|by|per|each|vs|compared)\b"
)
_VALUE = r"""(?:["'](?P<q>[^"']+)["']|(?!""" + _NOT_A_VALUE + r""")(?P<v>[\w.:\-/]+?)(?=[\s,?!;]|$|\.(?:\s|$)))"""
_ONE = r"""(?:["'][^"']+["']|(?!""" + _NOT_A_VALUE + r""")[\w.:\-/]+?(?=[\s,?!;]|$|\.(?:\s|$)))"""
_FILTERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "instance",
        re.compile(
            rf"\b(?:on|for|from|of|at)\s+(?:the\s+)?(?:host|hostname|server|node|machine|instance)\s+{_VALUE}",
            re.I,
        ),
    ),
    ("job", re.compile(rf"\b(?:on|for|from|of|in)\s+(?:the\s+)?job\s+{_VALUE}", re.I)),
    (
        "device",
        re.compile(rf"\b(?:on|for|of|from)\s+(?:the\s+)?(?:device|interface|nic|disk)\s+{_VALUE}", re.I),
    ),
    ("mountpoint", re.compile(rf"\b(?:on|for|of)\s+(?:the\s+)?mount\s*point\s+{_VALUE}", re.I)),
    ("mode", re.compile(rf"\b(?:in|for|of)\s+(?:the\s+)?(?:cpu\s+)?mode\s+{_VALUE}", re.I)),
    (
        "instance",
        re.compile(
            r"\bon\s+(?P<v>(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?|localhost(?::\d+)?|[\w\-]+(?:\.[\w\-]+)*:\d+)\b",
            re.I,
        ),
    ),
)
# Several values of one label: "on hosts web-1 and web-2", "for jobs node, prometheus".
_MULTI_FILTERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "instance",
        re.compile(
            rf"\b(?:on|for|from|of|at)\s+(?:the\s+)?(?:hosts|servers|nodes|machines|instances)\s+"
            rf"(?P<vs>{_ONE}(?:\s*(?:,|and|or|&)\s*{_ONE})+)",
            re.I,
        ),
    ),
    (
        "job",
        re.compile(rf"\b(?:on|for|from|of|in)\s+(?:the\s+)?jobs\s+(?P<vs>{_ONE}(?:\s*(?:,|and|or|&)\s*{_ONE})+)", re.I),
    ),
    (
        "device",
        re.compile(
            rf"\b(?:on|for|of|from)\s+(?:the\s+)?(?:devices|interfaces|nics|disks)\s+"
            rf"(?P<vs>{_ONE}(?:\s*(?:,|and|or|&)\s*{_ONE})+)",
            re.I,
        ),
    ),
)
_DANGLING = re.compile(
    r"(?:\s+\b(?:for|in|over|during|since|from|on|of|at|with|and|than|to)(?:\s+the)?)+\s*[?.!]*$", re.I
)
_LEADING = re.compile(r"^\s*(?:and|with|of|for|in)\b\s*", re.I)
_EXPLICIT_LABEL = re.compile(r"\b(?P<k>[a-zA-Z_]\w*)\s*(?P<op>=~|=)\s*[\"'](?P<v>[^\"']*)[\"']")
_PARTS = re.compile(r"\s*(?:[,;&]|\band\b|\bplus\b|\bas\s+well\s+as\b|\balong\s+with\b|\btogether\s+with\b)\s*", re.I)


@dataclass(slots=True)
class TextParts:
    """What the text alone says, before the metric is matched against the server."""

    operation: Operation
    time_range: TimeRange
    aggregation: Aggregation | None
    filters: dict[str, str]
    remainder: str
    time_error: str | None = None
    group_by: list[str] = field(default_factory=list)
    ranking: Ranking | None = None
    comparison: Comparison | None = None
    named_values: dict[str, list[str]] = field(default_factory=dict)
    window_kind: str = "default"
    missing: list[MissingPart] = field(default_factory=list)


def _number(text: str | None) -> int | None:
    if not text:
        return None
    if text.isdigit():
        return int(text)
    return word_number(text.lower())


def label_of(word: str) -> str:
    """The label a word names ("hosts" → instance, "status code" → code), or the word itself."""
    key = "_".join(word.lower().split())
    return LABEL_WORDS.get(key, key)


_PLURALS = frozenset(w for w in LABEL_WORDS if w.endswith("s") and (w[:-1] in LABEL_WORDS or w[:-2] in LABEL_WORDS))
_MEASURED_LABELS = frozenset({"cpu", "device"})
"""Labels whose nouns also say what is measured (CPU, disk, interface); others (host, job,
mode...) only say what is ranked or broken down and stay out of the metric phrase."""


def _measured(word: str) -> bool:
    key = word.lower()
    return key not in _LABEL_NOUNS or LABEL_WORDS.get(key) in _MEASURED_LABELS


DEFAULT_TOP_N = 5
"""How many series "top hosts by CPU" keeps when it says no number (one for "the top host")."""


MAX_TOP = 100
"""At most this many series are kept by a ranking ("top 500 hosts" keeps 100, and says so)."""


def _read_ranking(text: str, spans: list[tuple[int, int]], asked: list[int]) -> tuple[Ranking | None, str | None, str]:
    """(ranking, the label ranked, words to keep in the metric phrase).

    "the 2 least busy CPUs" ranks CPUs and measures how busy they are: "busy CPUs" stays
    as the metric phrase; "top 3 hosts by memory used" leaves "memory used" (and "hosts").
    """
    blank = masked(text, spans)
    for pattern in _RANKINGS:
        m = pattern.search(blank)
        if m is None:
            continue
        found = m.groupdict()
        direction = " ".join((found.get("dir") or "top").lower().split())
        order = "bottom" if re.fullmatch(_BOTTOM_WORDS + "|bottom", direction) else "top"
        ent = found.get("ent")
        n = _number(found.get("n"))
        if n is None:
            key = "_".join((ent or "").lower().split())
            plural = key in _PLURALS or (key not in LABEL_WORDS and key.endswith("s"))
            n = DEFAULT_TOP_N if plural else 1
        adjective = (
            "busy" if re.search(r"busy|busiest|idlest", direction) else ("load" if "loaded" in direction else "")
        )
        # What is ranked is context for the metric only when it names a measured thing
        # ("top 5 network interfaces by traffic": network traffic; "the 2 least busy CPUs"
        # says both what and how); a host or a job is not measured ("top 5 hosts by CPU" is
        # CPU usage, not the guest CPU time that "host" sounds like).
        keep = " ".join([adjective, *(w for w in (ent or "").split() if _measured(w))]).strip()
        spans.append(m.span())
        label = None
        if ent:
            key = "_".join(ent.lower().split())
            label = label_of(key) if key in LABEL_WORDS else (key[:-1] if key.endswith("s") else key)
            if key not in LABEL_WORDS:
                keep = adjective
        if n > MAX_TOP:
            asked.append(n)
        return Ranking(n=max(1, min(n, MAX_TOP)), order=order), label, keep
    return None, None, ""


def _read_breakdown(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """Labels named after "by", "per", "for each"... ("by instance and mode" → [instance, mode])."""
    spans += [m.span() for m in _ACROSS_ALL.finditer(masked(text, spans))]
    blank = masked(text, spans)
    labels: list[str] = []
    for m in _BREAKDOWN.finditer(blank):
        names = [n for n in re.split(r"\s*(?:,|\band\b|&)\s*(?:by\s+)?", m.group("l").strip()) if n]
        out = []
        for name in names:
            key = "_".join(name.lower().split())
            if key in _UNIT_WORDS:
                break  # "per second", "by the hour": a rate or a time bucket, not a label
            if key in LABEL_WORDS or "_" in key:
                out.append(label_of(key))
                continue
            rest = _FILLER.sub("", blank[m.end() :])
            if name is names[-1] and not rest:  # a word at the end: a label the user named
                out.append(key)
            else:
                break
        if out:
            labels += [label for label in out if label not in labels]
            spans.append(m.span())
    return labels


def _read_filters(text: str, spans: list[tuple[int, int]]) -> tuple[dict[str, str], dict[str, list[str]], list[str]]:
    """(filters, the values each filter names, labels to break down by for several values)."""
    filters: dict[str, str] = {}
    named: dict[str, list[str]] = {}
    group: list[str] = []
    for m in _EXPLICIT_LABEL.finditer(text):
        filters[m.group("k")] = ("~" if m.group("op") == "=~" else "") + m.group("v")
        if m.group("op") == "=":
            named[m.group("k")] = [m.group("v")]
        spans.append(m.span())
    for label, pattern in _MULTI_FILTERS:
        several = pattern.search(masked(text, spans))
        if several is None or label in filters:
            continue
        values = [v.strip("\"' ") for v in re.split(r"\s*(?:,|\band\b|\bor\b|&)\s*", several.group("vs")) if v.strip()]
        values = list(dict.fromkeys(v.rstrip(".") for v in values if v))
        if len(values) < 2:
            continue
        if label == "instance":
            filters[label] = "~" + "|".join(re.escape(v) if ":" in v else f"{re.escape(v)}(:[0-9]+)?" for v in values)
        else:
            filters[label] = "~" + "|".join(re.escape(v) for v in values)
        named[label] = values
        group.append(label)
        spans.append(several.span())
    for label, pattern in _FILTERS:
        found = pattern.search(masked(text, spans))
        if found is not None and label not in filters:
            value = (found.groupdict().get("q") or found.group("v")).rstrip(".")
            filters[label] = value
            named[label] = [value]
            spans.append(found.span())
    return filters, named, group


def read_text(question: str, now: datetime) -> TextParts:
    """Operation, windows, ranking, breakdown, statistic and filters; the rest names the metrics.

    A window that cannot be used is kept as `time_error` (with the default window)
    so that an unsupported operation still wins as the reported error.
    """
    operation: Operation = "query"
    for op, pattern in _OPERATIONS:
        if pattern.search(question):
            operation = op
            break
    spans: list[tuple[int, int]] = []
    time_error = None
    comparison: Comparison | None = None
    missing: list[MissingPart] = []
    compared = COMPARATOR.search(question)
    try:
        found = read_windows(question, now)
        window, comparison, unused = comparison_of(found, now, compared is not None)
        spans += found.spans
        if unused:
            missing.append(
                MissingPart(
                    part=unused,
                    reason=f"the question names more than one window and does not compare them; "
                    f"{window.time_range.expression} is answered",
                    error_type="invalid_time_range",
                    suggestion=f'To compare, say so: "{window.time_range.expression} vs {unused}".',
                )
            )
        elif compared is not None and comparison is None:
            after = masked(question, spans)[compared.end() :]
            if _TIME_HINT.search(after) or not _FILLER.sub("", after):
                missing.append(
                    MissingPart(
                        part=" ".join(f"the comparison ({compared.group(0)}{after.rstrip(' ?.!')})".split()),
                        reason="the window to compare with could not be read; "
                        f"{window.time_range.expression} is answered alone",
                        error_type="invalid_time_range",
                        suggestion='Name the earlier window, e.g. "vs the same hour yesterday", '
                        '"compared to last week", "March vs February".',
                    )
                )
    except TimeParseError as exc:
        time_error = str(exc)
        window = default_window(now)
    before = len(spans)
    asked: list[int] = []
    ranking, ranked_label, keep = _read_ranking(question, spans, asked)
    if ranking is not None and asked:
        missing.append(
            MissingPart(
                part=f"{ranking.order} {asked[0]}",
                reason=f"a ranking keeps at most {MAX_TOP} series; the {ranking.order} {MAX_TOP} are answered",
                error_type="unanswered_part",
                suggestion=f"Ask for the {ranking.order} {MAX_TOP} or fewer, or for a breakdown without a ranking.",
            )
        )
    ranking_spans = spans[before:]
    filters, named, grouped = _read_filters(question, spans)
    group_by = _read_breakdown(question, spans)
    for label in [*grouped, *([ranked_label] if ranking is not None else [])]:
        if label and label not in group_by:
            group_by.append(label)
    if ranking is not None and not group_by:
        group_by.append("instance")  # "top 5 by CPU": hosts, unless another label is named
    aggregation: Aggregation | None = None
    blank = masked(question, ranking_spans)  # "the highest" ranks; it is not the statistic
    for agg, pattern in _AGGREGATIONS:
        if pattern.search(blank):
            aggregation = agg
            break
    remainder = question
    for start, end in sorted(spans, reverse=True):
        remainder = remainder[:start] + " " + remainder[end:]
    remainder = COMPARATOR.sub(" ", remainder)
    if keep:
        remainder = f"{keep} {remainder}"
    remainder = _LEADING.sub("", _DANGLING.sub("", " ".join(remainder.split())).strip()).strip()
    return TextParts(
        operation=operation,
        time_range=window.time_range,
        aggregation=aggregation,
        filters=filters,
        remainder=remainder,
        time_error=time_error,
        group_by=group_by,
        ranking=ranking,
        comparison=comparison,
        named_values=named,
        window_kind=window.kind,
        missing=missing,
    )


@dataclass(slots=True)
class _Resolved:
    """What one metric phrase of a question names: a metric or concept, a missing one, or nothing."""

    name: str | None = None
    alternatives: list[str] = field(default_factory=list)
    missing: MissingPart | None = None
    unrelated: bool = False
    details: dict[str, object] = field(default_factory=dict)


def _real_names(ranked_candidates: Sequence[Candidate], catalog: Mapping[str, MetricInfo], n: int = 3) -> list[str]:
    """The real metric names behind the closest candidates (a concept stands for the metrics it reads)."""
    out: list[str] = []
    for c in ranked_candidates:
        names = (c.concept.resolve(catalog) or []) if c.concept is not None else [c.name]
        out += [name for name in names if name not in out]
    return out[:n]


def resolve_phrase(
    phrase: str,
    catalog: Mapping[str, MetricInfo],
    embedder: Embedder,
    candidates: TextEmbedder | None = None,
) -> _Resolved:
    """The metric or concept one phrase names, or why none does."""
    from concerto.packs.metrics.match import (
        ALTERNATIVE_MARGIN,
        UNRELATED_SIMILARITY,
        choose,
        closest_names,
        content_words,
        explicit_metric,
        rank,
    )
    from concerto.packs.metrics.match import unexplained as unexplained_words

    metric, unknown = explicit_metric(phrase, catalog)
    if metric is not None:
        return _Resolved(name=metric)
    if unknown is not None:
        near = closest_names(unknown, list(catalog))
        return _Resolved(
            missing=MissingPart(
                part=f"metric {unknown}",
                reason=f"there is no metric named '{unknown}' on this server",
                error_type="metric_not_found",
                suggestion=f"Did you mean {', '.join(near)}?"
                if near
                else 'Describe the quantity instead, e.g. "CPU usage" or "memory used".',
            ),
            details={"metric": unknown, "closest": near},
        )
    if not content_words(phrase):
        return _Resolved(unrelated=True)
    found = rank(phrase, catalog, embedder, candidates=candidates)
    details: dict[str, object] = {"phrase": phrase, "candidates": [(c.name, round(c.score, 3)) for c in found]}
    if not found or max(c.similarity for c in found) < UNRELATED_SIMILARITY:
        return _Resolved(unrelated=True, details=details)
    near = _real_names(found, catalog)
    said = spoken(phrase)
    if found[0].score < _min_score():
        return _Resolved(
            missing=MissingPart(
                part=said,
                reason="no metric on this server matches it",
                error_type="metric_not_found",
                suggestion=f"The closest are {', '.join(near)}; name one of them."
                if near
                else f"Ask about a metric this server collects, e.g. {EXAMPLES}.",
            ),
            details=details | {"closest": near},
        )
    chosen, unexplained = choose(phrase, found, embedder, candidates, _LABEL_NOUNS)
    if chosen is None:
        words = ", ".join(f"'{w}'" for w in unexplained)
        return _Resolved(
            missing=MissingPart(
                part=said,
                reason=f"no metric on this server measures {words}",
                error_type="metric_not_found",
                suggestion=f"The closest metrics are {', '.join(near)}; ask about one of them."
                if near
                else f"Ask about a metric this server collects, e.g. {EXAMPLES}.",
            ),
            details=details | {"closest": near, "unexplained": unexplained},
        )
    alternatives = [
        c.name
        for c in found
        if c.name != chosen.name
        and c.score >= _min_score()
        and found[0].score - c.score <= ALTERNATIVE_MARGIN
        and not unexplained_words(phrase, c, embedder, candidates, _LABEL_NOUNS)
    ]
    return _Resolved(name=chosen.name, alternatives=alternatives, details=details)


def spoken(phrase: str) -> str:
    """A metric phrase as the answer repeats it: without the question around it
    ("what is the temperature of the CPU?" → "temperature of the CPU")."""
    from concerto.packs.metrics.match import GENERIC

    words = phrase.strip(" ?.!").split()
    while len(words) > 1 and words[0].lower().strip(",'\"") in GENERIC:
        words.pop(0)
    return " ".join(words) or phrase


def metric_phrases(remainder: str) -> list[str]:
    """The metric phrases of a question: "CPU and memory used" → ["CPU", "memory used"]."""
    parts = [p.strip(" .?!") for p in _PARTS.split(remainder) if p and p.strip(" .?!")]
    return parts or [remainder]


def parse_question(
    question: str,
    now: datetime,
    catalog: Mapping[str, MetricInfo],
    embedder: Embedder,
    candidates: TextEmbedder | None = None,
) -> MetricsQuery:
    """Translate a question into a `MetricsQuery` against the metrics this server has.

    Several metrics ("CPU and memory used") become the query and its `also`; a metric the
    question names that this server does not have is a `missing` part when another one is
    answered, and `metric_not_found` when none is. Raises `MetricsQueryFailure`
    (`parsing_error`, `metric_not_found`, `invalid_time_range`) when the question cannot be
    answered as asked.
    """
    if not question or not question.strip():
        raise MetricsQueryFailure(
            "parsing_error",
            "Could not understand your query: it is empty.",
            suggestion=f"Ask for example {EXAMPLES}.",
        )
    parts = read_text(question, now)
    if parts.time_error and parts.operation == "query":
        raise time_failure(parts.time_error)
    phrases = metric_phrases(parts.remainder or question)
    if len(phrases) > 1:
        whole = resolve_phrase(parts.remainder, catalog, embedder, candidates)
        split = [resolve_phrase(p, catalog, embedder, candidates) for p in phrases[: MAX_METRICS + 2]]
        names = [r.name for r in split if r.name]
        # "disk read and write throughput" may name one concept; split only when the parts differ.
        if whole.name is not None and len(set(names)) <= 1 and not any(r.missing for r in split):
            resolved = [whole]
        else:
            resolved = split
    else:
        resolved = [resolve_phrase(phrases[0], catalog, embedder, candidates)]
    return assemble(parts, resolved, phrases, catalog)


def assemble(
    parts: TextParts, resolved: Sequence[_Resolved], phrases: Sequence[str], catalog: Mapping[str, MetricInfo]
) -> MetricsQuery:
    """The `MetricsQuery` of the metrics `resolved` from the question's `phrases` (at most
    MAX_METRICS, the rest a missing part), or the failure when none is answered."""
    every = list(dict.fromkeys(r.name for r in resolved if r.name))
    names = every[:MAX_METRICS]
    alternatives = {r.name: r.alternatives for r in resolved if r.name}
    missing = [r.missing for r in resolved if r.missing is not None]
    dropped = list(phrases[MAX_METRICS + 2 :]) if len(resolved) > 1 else []
    if len(every) > MAX_METRICS or dropped:
        phrase_of = {r.name: str(r.details.get("phrase") or r.name) for r in reversed(resolved) if r.name}
        said = [*(spoken(phrase_of.get(n, n)) for n in every[MAX_METRICS:]), *dropped]
        missing.append(
            MissingPart(
                part=", ".join(said),
                reason=f"at most {MAX_METRICS} metrics are answered from one question",
                error_type="unanswered_part",
                suggestion=f"Ask about {', '.join(said)} in a question of its own.",
            )
        )
    if not names:
        if parts.operation != "query":  # unsupported whatever the metric: validation says so
            return _query("unknown", parts, "", ["unknown"], "", "the metric")
        if missing:
            first = next(r for r in resolved if r.missing is not None)
            assert first.missing is not None
            message = (
                f"There is no metric named '{first.details['metric']}'."
                if "metric" in first.details
                else f"There is no metric for '{first.missing.part}' on this server: {first.missing.reason}."
            )
            raise MetricsQueryFailure(
                "metric_not_found",
                message,
                suggestion=first.missing.suggestion,
                details=first.details | {"missing": [m.model_dump() for m in missing]},
            )
        raise MetricsQueryFailure(
            "parsing_error",
            "Could not understand your query as a question about metrics.",
            suggestion=f"Ask for example {EXAMPLES}.",
            details={"phrase": parts.remainder, **(resolved[0].details if resolved else {})},
        )
    queries = [compile_query(name, parts, catalog, alternatives.get(name, [])) for name in names]
    first_query = queries[0]
    return first_query.model_copy(update={"also": queries[1:], "missing": [*parts.missing, *missing]})


def _min_score() -> float:
    from concerto.packs.metrics.match import MIN_SIMILARITY

    return MIN_SIMILARITY


def compile_query(
    name: str, parts: TextParts, catalog: Mapping[str, object], alternatives: Sequence[str] = ()
) -> MetricsQuery:
    """The `MetricsQuery` for a concept key or metric name, shaped as `parts` say."""
    query = _query(name, parts, "", [name], "", "").model_copy(update={"alternatives": list(alternatives)})
    return recompile(query, catalog)


def recompile(query: MetricsQuery, catalog: Mapping[str, object]) -> MetricsQuery:
    """Build (again) the PromQL of `query` from its metric, filters, breakdown, ranking and
    comparison: after labels the metric does not have were taken out, for instance."""
    step = query.time_range.step_seconds
    by = tuple(query.group_by)
    concept = CONCEPTS_BY_KEY.get(query.metric_name)
    aggregation = query.aggregation
    built = None
    baseline = None
    offset = (
        duration_text(query.comparison.offset_seconds) if query.comparison and query.comparison.offset_seconds else ""
    )
    if concept is not None:
        aggregation = aggregation or concept.default_aggregation
        built = build_concept(concept, catalog, query.filters, step, aggregation, by=by)
        if built is not None and query.comparison is not None:
            baseline = build_concept(concept, catalog, query.filters, step, aggregation, by=by, offset=offset)
    if built is None:
        info = catalog.get(query.metric_name)
        mtype = getattr(info, "type", "unknown")
        unit = getattr(info, "unit", "")
        built = build_metric(query.metric_name, mtype, catalog, query.filters, step, aggregation, unit, by=by)
        if query.comparison is not None:
            baseline = build_metric(
                query.metric_name, mtype, catalog, query.filters, step, aggregation, unit, by=by, offset=offset
            )
    promql = built.promql
    if query.ranking is not None and by:
        promql = ranked(
            promql,
            query.ranking.n,
            query.ranking.order,
            query.time_range.duration_seconds,
            step,
            aggregation,
        )
    return query.model_copy(
        update={
            "aggregation": aggregation,
            "promql": promql,
            "metrics": built.metrics,
            "unit": built.unit,
            "label": built.label,
            "baseline_promql": baseline.promql if baseline is not None else "",
        }
    )


def _query(name: str, parts: TextParts, promql: str, metrics: list[str], unit: str, label: str) -> MetricsQuery:
    return MetricsQuery(
        metric_name=name,
        time_range=parts.time_range,
        aggregation=parts.aggregation,
        filters=dict(parts.filters),
        operation=parts.operation,
        promql=promql,
        metrics=metrics,
        unit=unit,
        label=label,
        group_by=list(parts.group_by),
        ranking=parts.ranking if parts.group_by else None,
        comparison=parts.comparison,
        named_values={k: list(v) for k, v in parts.named_values.items()},
    )
