"""Metrics pack (003_*.txt): the `metrics_agent` over Prometheus or Grafana.

`pack.py` declares it; httpx, the embedder and the node load on the first metrics
question, so the CLI starts fast.
"""
