"""Real services started by the test suite (an OpenAI-compatible LLM server, ...)."""
