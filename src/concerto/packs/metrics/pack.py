"""The metrics pack (003_*.txt): the `metrics_agent` over Prometheus or Grafana."""

from concerto.agents.pack import Pack

pack = Pack(
    name="metrics",
    description="System metrics in plain language, from Prometheus or Grafana's datasource proxy.",
    agents=["concerto.packs.metrics.agent:MetricsAgent"],
    settings="concerto.packs.metrics.settings:MetricsSettings",
    commands={"metrics": "concerto.packs.metrics.cli:metrics"},  # `concerto metrics local`
)
