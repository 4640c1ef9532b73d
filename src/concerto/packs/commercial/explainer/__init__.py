"""`explainer`: the agent (`agent`, with the LLM path and its number check), the templates it writes from
without an LLM (`wording`)."""
