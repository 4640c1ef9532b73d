"""Metrics pack (003_*.txt): the `metrics_agent` over Prometheus or Grafana."""
