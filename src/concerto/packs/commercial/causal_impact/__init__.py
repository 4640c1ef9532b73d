"""`causal_impact`: the agent (`agent`), how it reads a question (`reading`), how it words the answer (`wording`)."""
