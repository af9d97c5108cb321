"""Model providers for the engine's ``understand`` and ``speak`` ports.

* :class:`RuleModel` — offline and deterministic; the embedded default (``make demo``, tests).
* :class:`OpenAICompatibleModel` — any server speaking the OpenAI chat-completions wire format
  (OpenAI, vLLM, Ollama, llama.cpp, LM Studio), with SSE streaming.
"""

from .openai import OpenAICompatibleModel
from .rule import RuleModel

__all__ = ["OpenAICompatibleModel", "RuleModel"]
