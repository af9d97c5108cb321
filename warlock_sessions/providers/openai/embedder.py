"""``POST {base_url}/embeddings`` on an OpenAI-compatible server (OpenAI, vLLM, Ollama,
llama.cpp's server, LM Studio), with the chat client's transport failures and error
classification."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from ...engine.ports import ProviderError
from ..embedders import unit
from .client import http_client
from .errors import response_error, send

#: Tries of a call a server refused with a retryable error (rate limit, 5xx, a dropped
#: connection), and the longest wait between two.
EMBED_ATTEMPTS = 2
MAX_EMBED_WAIT = 1.0


class OpenAICompatibleEmbedder:
    """``OpenAICompatibleEmbedder(base_url, model, api_key=None, dimensions=None)``: one
    connection pool, safe to share between threads. ``dimensions`` is asked of servers that
    can shorten their vectors (OpenAI's ``text-embedding-3-*``); a reply of another length is
    refused. Failures raise ``ProviderError`` (the cache then answers from the model)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if dimensions is not None and (type(dimensions) is not int or dimensions < 1):
            raise ValueError(f"dimensions is a whole number above 0, not {dimensions!r}")
        self.model = model
        self.requested = dimensions
        self.dimensions = dimensions or 0  # learnt from the first reply when not asked
        self.name = f"openai-compatible:{model}" + (f":{dimensions}" if dimensions else "")
        self._http = http_client(base_url, api_key, timeout, headers, transport)

    def close(self) -> None:
        self._http.close()

    def embed(self, text: str) -> list[float]:
        body: dict[str, Any] = {"model": self.model, "input": text}
        if self.requested:
            body["dimensions"] = self.requested
        for attempt in range(1, EMBED_ATTEMPTS + 1):
            try:
                return self._vector(send(lambda: self._http.post("/embeddings", json=body)))
            except ProviderError as error:
                if not error.retryable or attempt == EMBED_ATTEMPTS:
                    raise
                time.sleep(_wait(error))
        raise AssertionError("unreachable: attempts >= 1")

    def _vector(self, response: httpx.Response) -> list[float]:
        if response.status_code >= 400:
            raise response_error(response, datetime.now(UTC))
        try:
            found = response.json()["data"][0]["embedding"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ProviderError(
                "provider-invalid", False, detail="the reply holds no data[0].embedding"
            ) from None
        if (
            not isinstance(found, list)
            or not found
            or not all(
                isinstance(value, int | float) and not isinstance(value, bool) for value in found
            )
        ):
            raise ProviderError("provider-invalid", False, detail="the embedding is not numbers")
        if self.dimensions and len(found) != self.dimensions:
            raise ProviderError(
                "provider-invalid",
                False,
                detail=f"the embedding has {len(found)} dimensions, not {self.dimensions}",
            )
        try:
            vector = unit([float(value) for value in found])
        except ValueError as error:  # Infinity or NaN, which json.loads lets through
            raise ProviderError("provider-invalid", False, detail=str(error)) from None
        self.dimensions = len(found)
        return vector


def _wait(error: ProviderError) -> float:
    if error.reset_at_ms is None:
        return 0.2
    seconds = error.reset_at_ms / 1000 - time.time()
    return min(MAX_EMBED_WAIT, max(0.0, seconds))
