"""Labels a query asks for that its metrics do not have ("CPU usage by datacenter").

Prometheus knows each metric's labels; a breakdown or a filter on a label the metric lacks
would return nothing, or everything, silently. Such a label is taken out of the query and
named as a missing part, with the labels the metric does have; when another metric the
words could mean has it ("CPU time per mode"), that one is read instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from concerto.packs.metrics.models import MetricsQuery, MissingPart
from concerto.packs.metrics.parser import recompile
from concerto.packs.metrics.promql import CONCEPTS_BY_KEY


def metrics_of(name: str, catalog: Mapping[str, object]) -> list[str]:
    """The metrics a concept key or metric name reads."""
    concept = CONCEPTS_BY_KEY.get(name)
    if concept is not None:
        return concept.resolve(catalog) or []
    return [name]


def label_checked_metrics(query: MetricsQuery, catalog: Mapping[str, object]) -> list[str]:
    """Every metric whose labels `check_labels` looks at: the ones read, and the alternatives'."""
    names = [m for part in query.parts() for m in part.metrics]
    names += [m for part in query.parts() for alt in part.alternatives for m in metrics_of(alt, catalog)]
    return list(dict.fromkeys(names))


def check_labels(
    query: MetricsQuery, labels_of: Mapping[str, Sequence[str]], catalog: Mapping[str, object]
) -> MetricsQuery:
    """`query` without the breakdown labels and filters its metrics do not have, each one a
    `missing` part naming the labels they do have ("CPU usage by datacenter": CPU usage has
    no label datacenter; its labels are cpu, instance, job, mode). Metrics whose labels are not
    in `labels_of` are left as they are."""
    parts: list[MetricsQuery] = []
    missing = list(query.missing)
    for part in query.parts():
        known = [set(labels_of[m]) for m in part.metrics if m in labels_of]
        if not known:
            parts.append(part)
            continue
        common = set.intersection(*known)
        wanted = set(part.group_by) | set(part.filters)
        if not wanted <= common:
            # "CPU time per mode": of the metrics the words could mean, the one with a mode label.
            for alternative in part.alternatives:
                reads = metrics_of(alternative, catalog)
                if reads and all(m in labels_of and wanted <= set(labels_of[m]) for m in reads):
                    switched = part.model_copy(
                        update={"metric_name": alternative, "metrics": [alternative], "label": "", "also": []}
                    )
                    part = recompile(MetricsQuery.model_validate(switched.model_dump()), catalog)
                    common = set.intersection(*(set(labels_of[m]) for m in reads))
                    break
        has = ", ".join(sorted(common)) or "none"
        bad_by = [label for label in part.group_by if label not in common]
        bad_filters = [label for label in part.filters if label not in common]
        if not bad_by and not bad_filters:
            parts.append(part)
            continue
        read_names = ", ".join(part.metrics)
        for label in bad_by:
            example = next(iter(sorted(common - {"job"})), "instance")
            missing.append(
                MissingPart(
                    part=f"{part.label} by {label}",
                    reason=f"{read_names} has no label '{label}'; its labels are {has}",
                    error_type="invalid_query",
                    suggestion=f'Break it down by one of its labels, e.g. "{part.label} by {example}".',
                )
            )
        for label in bad_filters:
            value = part.filters[label].lstrip("~")
            missing.append(
                MissingPart(
                    part=f"{part.label} for {label} {value}",
                    reason=f"{read_names} has no label '{label}', so the filter was not applied; its labels are {has}",
                    error_type="invalid_query",
                    suggestion=f"Filter on one of its labels: {has}.",
                )
            )
        group_by = [label for label in part.group_by if label in common]
        kept = part.model_copy(
            update={
                "group_by": group_by,
                "ranking": part.ranking if group_by else None,
                "filters": {k: v for k, v in part.filters.items() if k in common},
                "named_values": {k: v for k, v in part.named_values.items() if k in common},
                "also": [],
                "missing": [],
            }
        )
        parts.append(recompile(kept, catalog))
    return parts[0].model_copy(update={"also": parts[1:], "missing": missing})
