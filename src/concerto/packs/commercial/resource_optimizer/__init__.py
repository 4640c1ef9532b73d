"""`resource_optimizer`: the agent (`agent`), how it reads a question (`reading`), the optimisation step
(`plan`), how it words the answer (`wording`)."""
