"""`health_score`: the agent (`agent`), its four components and the overall score (`components`), how it
words the answer (`wording`)."""
