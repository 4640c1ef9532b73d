"""Metrics pack (003_*.txt): the `metrics_agent` over Prometheus or Grafana.

Importing the pack registers the agent and nothing heavier: httpx, the embedder and
the node load on the first metrics question, so the CLI starts fast.
"""

from concerto.packs.metrics import agent as agent

__all__ = ["agent"]
