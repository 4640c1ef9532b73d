"""The built-in data set is declared as first-use work (`Agent.first_use`): the orchestrator
loads it before the commercial agents' tasks, outside their timeouts."""

from __future__ import annotations

from pathlib import Path

from concerto.contracts.orchestrator import OrchestratorInput
from concerto.data.sources import store_for
from concerto.packs.commercial.causal_impact.agent import CausalImpactAgent
from concerto.packs.commercial.resource_optimizer.agent import ResourceOptimizerAgent
from concerto.resources import Resources
from concerto.settings import Settings


def test_each_agent_declares_the_data_set_it_reads_until_it_is_loaded(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, store_events=False)
    resources = Resources(settings)
    causal, optimizer = CausalImpactAgent(settings, resources), ResourceOptimizerAgent(settings, resources)
    try:
        panel, spend = causal.first_use(), optimizer.first_use()
        assert panel is not None and (panel.key, panel.title) == ("commercial.commercial", "the commercial data set")
        assert spend is not None and spend.key == "commercial.commercial_spend"
        assert causal.first_use(OrchestratorInput(query="effect of train on re78", source="jtrain3")) is None
        panel.run()
        assert causal.first_use() is None and optimizer.first_use() is not None
        names = [c.name for c in store_for(settings, resources).contexts()]
        assert names == ["commercial"]
    finally:
        store_for(settings, resources).close()
