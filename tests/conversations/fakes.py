"""A scripted agent for the conversation tests: it records the history it was given, can call
a tool, fail, raise, crash the process mid-run, wait at a barrier, and in durable mode keeps
an agent snapshot after each trip so ``resume`` re-runs no finished tool."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from warlock_sessions.conversations import AgentResult
from warlock_sessions.errors import AgentDriftError, WarlockError
from warlock_sessions.snapshots import SnapshotStore


class NoDurableStoreError(WarlockError):
    pass


@dataclass
class FakeStream:
    events: list[dict[str, Any]]
    outcome: AgentResult

    def __iter__(self) -> Any:
        return iter(self.events)

    @property
    def result(self) -> AgentResult:
        return self.outcome


@dataclass
class FakeAgent:
    name: str = "assistant"
    signature: str = "sig-1"
    reply: str = "Hello there"
    use_tool: bool = False
    fail: BaseException | None = None
    raises: BaseException | None = None
    crash_after_tool: bool = False
    durable: SnapshotStore | None = None
    history_window: int | None = None
    barrier: threading.Barrier | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    tools_ran: list[str] = field(default_factory=list)

    def execute(
        self, input: Any, *, history: list[dict[str, Any]], run_id: str, **options: Any
    ) -> AgentResult:
        self.calls.append({"input": input, "history": history, **options})
        if self.barrier is not None:
            self.barrier.wait(10)
        if self.raises is not None:
            raise self.raises
        if self.fail is not None:
            return AgentResult(messages=history, error=self.fail, run_id=run_id)
        messages = [*history, {"role": "user", "content": input}]
        if self.use_tool:
            self.tools_ran.append(run_id)
            messages += [
                {
                    "role": "assistant",
                    "content": "",
                    "toolCalls": [
                        {"id": f"c{len(history)}", "name": "lookup", "input": {"q": input}}
                    ],
                },
                {"role": "tool", "toolCallId": f"c{len(history)}", "content": "42"},
            ]
            self._checkpoint(run_id, messages, "running")
            if self.crash_after_tool:
                os._exit(9)
        return self._finish(run_id, messages)

    def _finish(self, run_id: str, messages: list[dict[str, Any]]) -> AgentResult:
        reply = {
            "role": "assistant",
            "content": self.reply,
            "blocks": [{"type": "thinking", "signature": "sig=="}],
        }
        messages = [*messages, reply]
        self._checkpoint(run_id, messages, "completed")
        return AgentResult(messages=messages, text=self.reply, run_id=run_id)

    def _checkpoint(self, run_id: str, messages: list[dict[str, Any]], status: str) -> None:
        if self.durable is not None:
            self.durable.save(
                {
                    "runId": run_id,
                    "agentName": self.name,
                    "signature": self.signature,
                    "messages": messages,
                    "status": status,
                }
            )

    def stream(
        self, input: Any, *, history: list[dict[str, Any]], run_id: str, **options: Any
    ) -> FakeStream:
        result = self.execute(input, history=history, run_id=run_id, **options)
        deltas = [{"type": "delta", "text": word + " "} for word in self.reply.split()]
        return FakeStream(deltas, result)

    def resume(self, run_id: str, *, force: bool = False, **options: Any) -> AgentResult:
        if self.durable is None:
            raise NoDurableStoreError(f'agent "{self.name}" has no durable store configured')
        snapshot = self.durable.load(run_id)
        if snapshot is None:
            raise NoDurableStoreError(f'agent "{self.name}" has no snapshot of run "{run_id}"')
        if snapshot["signature"] != self.signature and not force:
            raise AgentDriftError(run_id, snapshot["signature"], self.signature)
        if snapshot["status"] == "completed":
            return AgentResult(messages=snapshot["messages"], run_id=run_id)
        return self._finish(run_id, snapshot["messages"])  # the tool is not run again
