"""`experiment_designer`: the agent (`agent`), how it reads a question (`reading`), how it words the answer and
writes the design document (`wording`)."""
