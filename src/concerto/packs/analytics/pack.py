"""The analytics pack (004_*.txt): the spec's agents over the data sources of `concerto.data`."""

from concerto.agents.pack import Pack

pack = Pack(
    name="analytics",
    description="Questions about your own tables (CSV, Parquet, JSON, Excel), answered with read-only SQL.",
    agents=[
        "concerto.packs.analytics.sql_analytics:SQLAnalyticsAgent",
        "concerto.packs.analytics.segmentation:SegmentationAgent",
        "concerto.packs.analytics.pattern_recognition:PatternRecognitionAgent",
        "concerto.packs.analytics.opportunity:OpportunityAgent",
        "concerto.packs.analytics.risk:RiskAgent",
        "concerto.packs.analytics.benchmark:BenchmarkAgent",
        "concerto.packs.analytics.business_impact:BusinessImpactAgent",
        "concerto.packs.analytics.data_ingestion:DataIngestionAgent",
        "concerto.packs.analytics.data_discovery:DataDiscoveryAgent",
        "concerto.packs.analytics.semantic_text:SemanticTextAgent",
        "concerto.packs.analytics.semantic_search:SemanticSearchAgent",
    ],
    reader="concerto.packs.analytics.table.hook:read_question",
)
