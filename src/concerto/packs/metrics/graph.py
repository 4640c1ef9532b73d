"""The node inside LangGraph (the optional `langgraph` extra): `metrics_agent -> END`.

003_*.txt designs the node to be extended by downstream nodes (visualization, anomaly
detection) without modification; `build_graph` is the minimal graph to start from.
"""

from __future__ import annotations

from typing import Any

from concerto.packs.metrics.models import MetricsQueryState
from concerto.packs.metrics.node import NodeDeps, make_node

NODE_NAME = "metrics_agent"


def build_graph(deps: NodeDeps) -> Any:
    """A compiled `StateGraph(MetricsQueryState)` with the single edge metrics_agent -> END.

    Raises ImportError with the install command when langgraph is missing.
    """
    try:
        from langgraph.graph import END, StateGraph
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the LangGraph node needs the extra: pip install 'concerto[langgraph]'") from exc
    graph = StateGraph(MetricsQueryState)
    node: Any = make_node(deps)  # an async function of the state; langgraph's stubs want sync
    graph.add_node(NODE_NAME, node)
    graph.set_entry_point(NODE_NAME)
    graph.add_edge(NODE_NAME, END)
    return graph.compile()
