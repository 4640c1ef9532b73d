"""`prediction_synthesizer`: the agent (`agent`), how it reads a question (`reading`), how it words the answer
(`wording`)."""
