"""A real OpenAI-compatible server for ``make test-llm``: llama-cpp-python's, started here on
127.0.0.1 with the Gemma 3 270M model assembled from its PyPI packages. Without
``WARLOCK_LLM_PYTHON`` (the interpreter that has ``llama_cpp``) and ``WARLOCK_LLM_MODEL`` (the
GGUF file), which ``make test-llm`` sets, nothing here is collected: ``make test`` replays
what these tests recorded (tests/providers/test_cassettes.py)."""

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

if not (PYTHON and MODEL):
    collect_ignore_glob = ["test_*.py"]


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
    process = subprocess.Popen(
        [PYTHON, "-m", "llama_cpp.server", "--model", MODEL, "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "2", *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    server = LlamaServer(process, port)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{server.url}/models", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.3)
    server.stop()
    raise RuntimeError("llama-cpp-python's server did not start in 120 s")


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
