"""How `explainer` writes without an LLM: the findings of each agent it explains, shaped by
the audience (an executive reads the headline and what to do, an analyst the findings, a data
scientist also the methods, assumptions and checks) and the format (narrative, structured,
brief)."""

from __future__ import annotations

from typing import Any

_DETAIL_KEYS = ("method", "methods", "assumptions", "refutations", "backtest", "estimators", "notes")


def template(results: list[dict[str, Any]], expertise: str, output_format: str) -> str:
    """The explanation without an LLM: findings by agent, shaped by audience and format."""
    label = {str(r["agent"]): str(r["agent"]).replace("_", " ") for r in results}
    if output_format == "brief":
        heads = [f"{label[str(r['agent'])].capitalize()}: {r['key_findings'][0]}" for r in results if r["key_findings"]]
        return " ".join(h.rstrip(".") + "." for h in heads[:2])
    sections: list[tuple[str, list[str]]] = []
    for r in results:
        findings = list(r["key_findings"])
        if expertise == "executive":
            findings = findings[:2] + [f"Recommended: {x}" for x in (r["output"].get("recommendations") or [])[:1]]
        elif expertise == "data_scientist":
            findings += [details(r)] if details(r) else []
        sections.append((label[str(r["agent"])].capitalize(), findings))
    if output_format == "structured":
        return "\n".join(f"## {title}\n" + "\n".join(f"- {f}" for f in findings) for title, findings in sections)
    paragraphs = []
    for title, findings in sections:
        body = " ".join(f.rstrip(".") + "." for f in findings) or "No findings."
        paragraphs.append(f"{title}: {body}")
    return "\n\n".join(paragraphs)


def details(result: dict[str, Any]) -> str:
    """Methods, assumptions and checks an agent reported, as one line for a data scientist."""
    output = result["output"]
    parts = []
    for key in _DETAIL_KEYS:
        value = output.get(key)
        if value in (None, [], {}, ""):
            continue
        parts.append(f"{key.replace('_', ' ')}: {_compact(value)}")
    return "; ".join(parts)


def _compact(value: Any, limit: int = 400) -> str:
    if isinstance(value, dict):
        text = ", ".join(f"{k}={_compact(v, 80)}" for k, v in value.items())
    elif isinstance(value, list):
        text = ", ".join(_compact(v, 80) for v in value)
    elif isinstance(value, float):
        text = f"{value:.4g}"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
