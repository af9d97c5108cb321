"""Model providers for the engine's ``understand`` and ``speak`` ports, and for the chat port
of a ``ToolAgent`` (``ChatModel``).

* :class:`RuleModel` — offline and deterministic; the embedded default (``make demo``, tests).
* :class:`OfflineChatModel` — the offline, deterministic chat model (tools, streaming).
* :class:`OpenAICompatibleModel` — any server speaking the OpenAI chat-completions wire format
  (OpenAI, vLLM, Ollama, llama.cpp, LM Studio), with SSE streaming; both ports.
* :class:`OfflineEmbedder` and :class:`OpenAICompatibleEmbedder` — the semantic cache's
  embedders (``/embeddings``).
"""

from typing import TYPE_CHECKING, Any

from .chat import ChatModel, ChatReply, ToolSchema
from .embedders import Embedder, OfflineEmbedder
from .offline import OfflineChatModel
from .rule import RuleModel

if TYPE_CHECKING:
    from .openai import OpenAICompatibleEmbedder, OpenAICompatibleModel

__all__ = [
    "ChatModel",
    "ChatReply",
    "Embedder",
    "OfflineChatModel",
    "OfflineEmbedder",
    "OpenAICompatibleEmbedder",
    "OpenAICompatibleModel",
    "RuleModel",
    "ToolSchema",
]


def __getattr__(name: str) -> Any:
    # Imported on first use: it needs httpx (the ``openai`` extra), RuleModel needs nothing.
    if name in ("OpenAICompatibleModel", "OpenAICompatibleEmbedder"):
        from . import openai

        return getattr(openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
