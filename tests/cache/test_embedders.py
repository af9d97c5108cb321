"""Embedders: the offline one is deterministic and ranks shared words close; the
OpenAI-compatible one against a real local HTTP server (the provider tests' fake)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from tests.providers.openai_server import OpenAIServer
from warlock_sessions.engine import ProviderError
from warlock_sessions.providers import OfflineEmbedder, OpenAICompatibleEmbedder


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def cosine(first: list[float], second: list[float]) -> float:
    return sum(a * b for a, b in zip(first, second, strict=True))


def test_the_offline_embedder_is_deterministic_and_ranks_shared_words_close() -> None:
    embedder = OfflineEmbedder(64)
    vector = embedder.embed("Where is the museum?")
    assert len(vector) == 64 and math.isclose(sum(v * v for v in vector), 1.0, rel_tol=1e-9)
    assert vector == OfflineEmbedder(64).embed("Where is the museum?")
    near = cosine(vector, embedder.embed("where's the museum"))
    far = cosine(vector, embedder.embed("How do I reset my password?"))
    assert near > 0.6 > far
    assert embedder.embed("") == [0.0] * 64
    with pytest.raises(ValueError):
        OfflineEmbedder(4)


def embedding(*values: float) -> dict[str, object]:
    return {"json": {"data": [{"embedding": list(values), "index": 0}], "model": "e"}}


def test_embeddings_from_a_server_with_a_retry_and_its_refusals(server: OpenAIServer) -> None:
    embedder = OpenAICompatibleEmbedder(server.url, "nomic-embed", api_key="k", dimensions=2)
    server.script.reply(**embedding(3.0, 4.0))
    assert embedder.embed("hello") == pytest.approx([0.6, 0.8])
    sent = server.script.requests[-1]
    assert sent["path"] == "/v1/embeddings"
    assert sent["body"] == {"model": "nomic-embed", "input": "hello", "dimensions": 2}
    assert sent["headers"]["Authorization"] == "Bearer k"

    server.script.reply(status=503, json={"error": {"message": "busy"}}).reply(**embedding(0, 1))
    assert embedder.embed("again") == pytest.approx([0.0, 1.0])  # tried once more

    server.script.reply(status=401, json={"error": {"message": "bad key"}})
    with pytest.raises(ProviderError) as refused:
        embedder.embed("no")
    assert not refused.value.retryable
    server.script.reply(**embedding(1.0, 2.0, 3.0))
    with pytest.raises(ProviderError, match="3 dimensions, not 2"):
        embedder.embed("wrong length")
    server.script.reply(json={"data": [{"embedding": ["a", "b"]}]})
    with pytest.raises(ProviderError, match="not numbers"):
        embedder.embed("not numbers")
    server.script.reply(raw="not json")
    with pytest.raises(ProviderError, match="no data"):
        embedder.embed("not json")
