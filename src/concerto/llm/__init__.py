"""The LLM layer: one client interface, an OpenAI-compatible provider, structured output."""

from concerto.llm.base import LLMClient, LLMError, LLMResponse, Message, Usage
from concerto.llm.openai_compat import OpenAICompatibleLLM, llm_from_settings
from concerto.llm.structured import complete_structured, complete_text

__all__ = [
    "LLMClient",
    "LLMError",
    "LLMResponse",
    "Message",
    "OpenAICompatibleLLM",
    "Usage",
    "complete_structured",
    "complete_text",
    "llm_from_settings",
]
