"""The OpenAI chat-completions wire format, in layers: ``errors`` (failures as provider codes),
``prompts`` (what is sent and how replies are read; pure), ``streaming`` (SSE and the reply's
text as it arrives; pure), ``client`` (HTTP, structured output modes, the schema fallback) and
``model`` (the engine's ports and the chat port, whose wire format is ``chat``)."""

from ..endpoints import check_base_url
from .embedder import OpenAICompatibleEmbedder
from .errors import classify, reset_delay_ms
from .model import OpenAICompatibleModel
from .prompts import parse_json_object
from .streaming import MessageDeltas

__all__ = [
    "MessageDeltas",
    "OpenAICompatibleEmbedder",
    "OpenAICompatibleModel",
    "check_base_url",
    "classify",
    "parse_json_object",
    "reset_delay_ms",
]
