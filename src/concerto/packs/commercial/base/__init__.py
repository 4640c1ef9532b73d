"""What the nine commercial agents share: the agent base class and a question's `Work`
(`agent`), the agent layer's errors (`errors`), which columns a question means (`columns`),
how drift_monitor and health_score choose the periods and features to compare
(`drift_reading`), and the built-in data set (`data`)."""
