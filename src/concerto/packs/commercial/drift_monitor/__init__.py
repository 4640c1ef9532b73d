"""`drift_monitor`: the agent (`agent`), which features it checks (`reading`; the periods are
`base.drift_reading`), how it words the answer (`wording`)."""
