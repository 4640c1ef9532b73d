"""The commercial pack (001_*.txt): nine agents with real statistics over the built-in
commercial data set (three brands' HCPs, activity and prescriptions) or any loaded source,
and INTENT_TO_AGENTS as its intent table."""

from pathlib import Path

from concerto.agents.pack import Pack

pack = Pack(
    name="commercial",
    description="Commercial analytics for pharmaceutical brands (001): causal effects, segments, gaps, "
    "experiments, forecasts, budget allocation, data health and drift, explained.",
    agents=[
        "concerto.packs.commercial.causal_impact.agent:CausalImpactAgent",
        "concerto.packs.commercial.heterogeneous_optimizer.agent:HeterogeneousOptimizerAgent",
        "concerto.packs.commercial.gap_analyzer.agent:GapAnalyzerAgent",
        "concerto.packs.commercial.experiment_designer.agent:ExperimentDesignerAgent",
        "concerto.packs.commercial.prediction_synthesizer.agent:PredictionSynthesizerAgent",
        "concerto.packs.commercial.resource_optimizer.agent:ResourceOptimizerAgent",
        "concerto.packs.commercial.health_score.agent:HealthScoreAgent",
        "concerto.packs.commercial.drift_monitor.agent:DriftMonitorAgent",
        "concerto.packs.commercial.explainer.agent:ExplainerAgent",
    ],
    intents=[Path(__file__).with_name("intents.yaml")],
)
