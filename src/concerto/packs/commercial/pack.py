"""The commercial pack (001_*.txt): INTENT_TO_AGENTS as an intent table.

Its nine agents (causal_impact, gap_analyzer, ...) are not built yet; each intent of the
table becomes active once the agents it names are registered.
"""

from pathlib import Path

from concerto.agents.pack import Pack

pack = Pack(
    name="commercial",
    description="Commercial analytics for pharmaceutical brands (001): intent table only, agents to come.",
    intents=[Path(__file__).with_name("intents.yaml")],
)
