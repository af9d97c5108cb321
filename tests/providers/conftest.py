"""The fake OpenAI-compatible server every provider test talks to (``openai_server``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .openai_server import OpenAIServer


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running
