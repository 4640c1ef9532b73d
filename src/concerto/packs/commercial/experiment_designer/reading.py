"""How `experiment_designer` reads a question: the numbers (the caller's `effect_size`, `mde`,
`lift`, `alpha`, `power`, `ratio`, `n_per_arm`, `baseline_rate`, `baseline_mean`,
`baseline_sd`, `unit`, `icc`, else the question: "a 10 % lift with 80 % power", "400 HCPs per
arm", "from 12 % to 14 %", "at the 1 % significance level"), the randomisation unit (HCPs, or
clusters such as territories), the outcome phrase and the intervention, as a checked `Ask`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from concerto.packs.commercial.base import columns as cols
from concerto.packs.commercial.base.errors import invalid
from concerto.packs.commercial.methods import power as dm
from concerto.packs.commercial.methods.power import Ask

if TYPE_CHECKING:
    from concerto.packs.commercial.base.agent import Work

_NUM = r"(\d[\d,]*(?:\.\d+)?|\.\d+)"
_PCT = r"\s*(%|percent|per cent)?"
_PATTERNS = {
    "power": [rf"{_NUM}{_PCT}\s*(?:statistical\s+)?power", rf"\bpower\s*(?:of|=|:|at|is)?\s*{_NUM}{_PCT}"],
    "alpha": [
        rf"(?:\balpha|α|significance(?:\s+level)?|level\s+of\s+significance)\s*(?:of|=|:|at|is)?\s*{_NUM}{_PCT}",
        rf"{_NUM}{_PCT}\s*(?:significance|level\b)",
    ],
    "confidence": [rf"{_NUM}{_PCT}\s*confidence"],
    "effect_size": [
        rf"(?:effect\s+size|cohen'?s\s+[dh]|standardi[sz]ed\s+effect|\bd\s*=)\s*(?:of|=|:|is)?\s*(-?{_NUM})",
        rf"(-?{_NUM})\s*(?:standard\s+deviations?|sds?\b|sigma)",
        rf"\beffect\s+of\s+(-?{_NUM})(?!\s*%)(?!\d)",
    ],
    "lift": [
        rf"(-?{_NUM})\s*(?:%|percent|per cent)\s*(?:relative\s+)?(?:lift|increase|uplift|improvement|rise|gain|growth|"
        r"change|difference|more|higher|boost)",
        rf"(?:lift|increase|uplift|improvement|rise|growth|boost)\s+of\s+(-?{_NUM})\s*(?:%|percent)",
    ],
    "mde": [
        rf"(?:increase|difference|change|lift|rise|mde)\s+of\s+(-?{_NUM})(?!\s*%)(?!\d)",
        rf"detect\s+(?:an?\s+)?(-?{_NUM})(?!\s*%)\s+(?:more|additional|extra)",
    ],
}
_PER_ARM = re.compile(rf"{_NUM}\s+(?:(?P<noun>[a-z-]+)\s+)?(?:per|in\s+each|each|an?)\s+(?:arm|group)", re.I)
_TOTAL = re.compile(rf"(?:with|have|using|of|only)\s+{_NUM}\s+(?P<noun>[a-z-]+)\b(?!\s+(?:per|each|in each))", re.I)
_RATES = re.compile(rf"from\s+{_NUM}\s*%\s*to\s+{_NUM}\s*%", re.I)
_RATE = re.compile(rf"(?:rate|proportion|share)\s*(?:of|is|=|:|at)?\s*{_NUM}\s*%", re.I)
_RATIO = re.compile(rf"{_NUM}\s*:\s*{_NUM}\s*(?:allocation|split|ratio)|ratio\s+(?:of\s+)?{_NUM}", re.I)
_UNIT = re.compile(
    r"randomi[sz]\w*\s+(?:by|at\s+the\s+level\s+of|at)\s+(?P<a>[a-z]+)|(?P<b>[a-z]+)[- ]level"
    r"|how\s+many\s+(?P<c>[a-z]+)|cluster\w*\s+(?:by|of)\s+(?P<d>[a-z]+)",
    re.I,
)
_OUTCOME = re.compile(
    r"(?:lift|increase|change|difference|uplift|improvement|rise|growth|effect|boost)\s+(?:in|on)\s+(?P<y>.+?)"
    r"(?:\s+(?:with|at|for|by|per|using|if|when|among|over|and)\b|[?.!,]|$)",
    re.I,
)
_ARM = re.compile(
    r"(?:test|trial|pilot|experiment|a/b test)\s+(?:of|for|on)\s+(?P<t>.+?)"
    r"(?:\s+(?:for|in|on|among|with|to|by)\b|[?.!,]|$)",
    re.I,
)
_INDIVIDUAL = {"hcp", "doctor", "physician", "unit", "prescriber", "customer", "account", "patient", "participant"}
_GROUPS = {"territory", "region", "cluster", "site", "practice", "hospital", "area"}


def _number(text: str, pct: str | None) -> float:
    value = float(text.replace(",", ""))
    return value / 100 if pct else value


def _find(key: str, text: str) -> float | None:
    for pattern in _PATTERNS[key]:
        m = re.search(pattern, text, re.I)
        if m:
            groups = [g for g in m.groups()]
            pct = groups[1] if len(groups) > 1 and key in ("power", "alpha", "confidence") else None
            value = _number(groups[0], pct)
            return value / 100 if key == "lift" else value
    return None


def _given_float(work: Work, key: str) -> float | None:
    value = work.given(key)
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise invalid(f"'{key}' must be a number, not {value!r}", f"Give {key} as a number.") from None


def read_ask(work: Work) -> Ask:
    """The ask from the payload (first) and the question; checked so the power classes get sane inputs."""
    text = work.request
    ask = Ask()
    for key in ("effect_size", "lift", "mde", "power"):
        setattr(ask, key, _given_float(work, key) if work.given(key) is not None else _find(key, text))
    alpha = _given_float(work, "alpha")
    if alpha is None:
        alpha = _find("alpha", text)
        confidence = _find("confidence", text)
        alpha = alpha if alpha is not None else (round(1 - confidence, 10) if confidence is not None else None)
    ask.alpha = 0.05 if alpha is None else alpha
    given_ratio = _given_float(work, "ratio")
    m = _RATIO.search(text)
    if given_ratio is not None:
        ask.ratio = given_ratio
    elif m:
        ask.ratio = float(m.group(3)) if m.group(3) else float(m.group(1)) / float(m.group(2))
    ask.one_sided = bool(re.search(r"one[- ](?:sided|tailed)", text, re.I)) or work.given("alternative") == "larger"
    n = _given_float(work, "n_per_arm")
    noun: str | None = None
    if n is None:
        per_arm = _PER_ARM.search(text)
        if per_arm:
            n, noun = float(per_arm.group(1).replace(",", "")), per_arm.group("noun")
        elif (total := _TOTAL.search(text)) and _is_unit(work, total.group("noun")):
            n, noun = float(total.group(1).replace(",", "")) / (1 + ask.ratio), total.group("noun")
    ask.n_per_arm = n
    rates = _RATES.search(text)
    rate = _given_float(work, "baseline_rate")
    if rate is not None:
        ask.rates = (rate, None)
    elif rates:
        ask.rates = (_number(rates.group(1), "%"), _number(rates.group(2), "%"))
    elif found := _RATE.search(text):
        ask.rates = (_number(found.group(1), "%"), None)
    ask.mean, ask.sd, ask.icc = (_given_float(work, k) for k in ("baseline_mean", "baseline_sd", "icc"))
    ask.cluster, ask.n_is_clusters = _cluster(work, noun)
    outcome = _OUTCOME.search(text)
    ask.outcome_phrase = outcome.group("y") if outcome and re.search(r"[a-z]", outcome.group("y"), re.I) else None
    arm = _ARM.search(text)
    ask.intervention = arm.group("t") if arm else str(work.given("intervention") or ask.intervention)
    dm.check(ask)
    return ask


def _cluster(work: Work, noun: str | None) -> tuple[str | None, bool]:
    """The cluster column when the design randomises groups (payload `unit`, "by territory",
    "territory-level", "how many territories", "cluster"), and whether the n given counts clusters."""
    source = work.source
    entity = (source.semantic_profile.entity_name or "").lower()
    named = work.given("unit")
    if named is not None:
        word = _singular(str(named))
        if word in _INDIVIDUAL or word == entity or source.column_of(word) == source.semantic_profile.entity_key:
            return None, False
        column = cols.resolve(source, str(named), "randomisation unit")
        if source.detected_types[column].role not in ("category", "label"):
            raise invalid(
                f"the randomisation unit '{column}' is not a grouping column",
                "Randomise HCPs (unit: hcp) or groups named by a category column such as territory or region.",
                error_type="invalid_column",
            )
        return column, False
    words = [m.group(m.lastgroup or "a") for m in _UNIT.finditer(work.request)] + ([noun] if noun else [])
    if re.search(r"\bcluster", work.request, re.I) and "territory" in source.columns:
        words.append("territory")
    for word in map(_singular, words):
        if word in _INDIVIDUAL or word == entity:
            continue
        found = source.column_of(word)
        if found and source.detected_types[found].role in ("category", "label"):
            return found, noun is not None and _singular(noun) == word
    return None, False


def _is_unit(work: Work, noun: str) -> bool:
    """Whether "400 <noun>" counts units: HCPs, doctors, territories, or a category column's name."""
    word = _singular(noun)
    entity = (work.source.semantic_profile.entity_name or "").lower()
    return word in _INDIVIDUAL or word in _GROUPS or word == entity or work.source.column_of(word) is not None


def _singular(word: str) -> str:
    word = word.lower().strip()
    return re.sub(r"ies$", "y", word) if word.endswith("ies") else word.removesuffix("s")
