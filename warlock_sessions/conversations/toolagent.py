"""ToolAgent: a tool-calling agent on any chat model (``OpenAICompatibleModel``, or the
offline ``OfflineChatModel``), keeping the conversation-agent protocol: ``execute``,
``stream`` and, when durable, ``resume``.

A run is a loop of *trips*: compact the history if it grew too long, ask the model, run the
tools it called and give it their results, until it answers without calling one. A durable
agent saves its snapshot before the first trip and after every trip (tool results in), so
``resume`` continues from there and runs no finished tool again."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..cache import CacheCall, SemanticCache
from ..engine.session import plain_json, storable, storable_text
from ..errors import (
    AgentCancelledError,
    AgentDriftError,
    AgentExecutionError,
    ToolArgumentsError,
)
from ..locks import AbortSignal
from ..providers.chat import ChatModel, ChatReply, Message, OnDelta, attachments_of, content_text
from ..snapshots import SnapshotStore
from ..workflows.runs import (
    CancelledElsewhere,
    SnapshotWriter,
    load_run,
    logger,
    new_run_id,
    new_run_store,
    now_iso,
    refuse_cancelled,
    resolve_store,
)
from ..workflows.signature import agent_signature
from .agent import AgentResult, EventStream
from .attachments import resolve_content
from .stores import is_window
from .tools import Tool, as_tool

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Compaction:
    """Before every trip, a history estimated above ``after_tokens`` keeps its newest ``keep``
    turns (a turn starts at a user message, so a tool call is never parted from its result)
    and the rest becomes one summary message, marked ``metadata.compaction``. ``summarize``
    writes the summary from the replaced messages (the model's own ``summarize`` by
    default)."""

    after_tokens: int
    keep: int = 1
    summarize: Callable[[list[Message]], str] | None = None

    def __post_init__(self) -> None:
        if type(self.after_tokens) is not int or self.after_tokens < 1:
            raise ValueError("compaction after_tokens is a whole number of tokens above 0")
        if type(self.keep) is not int or self.keep < 1:
            raise ValueError("compaction keep is a whole number of turns, at least 1")


def estimate_tokens(messages: Iterable[Message]) -> int:
    """About four characters a token; an attachment counts 256."""
    characters = 0
    for message in messages:
        characters += len(content_text(message.get("content")))
        characters += len(json.dumps(message.get("toolCalls") or [], ensure_ascii=False))
        characters += 1024 * len(attachments_of(message.get("content")))
    return characters // 4


def prompt_length(messages: list[Message]) -> int:
    """How many messages at the start are the system prompt (0 or 1)."""
    return 1 if messages and messages[0]["role"] == "system" else 0


def is_summary(message: Message) -> bool:
    return bool((message.get("metadata") or {}).get("compaction"))


class ToolAgent:
    """``model``: a chat model; ``system_prompt``: added on every run, never stored;
    ``tools``: ``Tool`` objects or annotated functions; ``compaction``: a ``Compaction`` (or
    its fields as a dict); ``history_window``: how many of the conversation's newest messages
    a session gives it (from the first user message among them; every message stays
    stored, and a store reads only those); ``durable``: a snapshot store, or ``True`` for
    ``WARLOCK_SESSIONS["SNAPSHOT_STORE"]``; ``max_trips``: model calls a run may make;
    ``version``: yours, part of the signature that resume checks."""

    def __init__(
        self,
        model: ChatModel,
        system_prompt: str = "",
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        name: str = "assistant",
        compaction: Compaction | Mapping[str, Any] | None = None,
        history_window: int | None = None,
        durable: SnapshotStore | bool | None = None,
        max_trips: int = 8,
        version: str | None = None,
        max_attachment_bytes: int = 10 * 1024 * 1024,
        cache: SemanticCache | None = None,
    ) -> None:
        if not name:
            raise ValueError("an agent needs a name")
        if type(max_trips) is not int or max_trips < 1:
            raise ValueError("max_trips is a whole number above 0")
        if history_window is not None and not is_window(history_window):
            raise ValueError("history_window is a whole number of messages above 0, or None")
        self.model = model
        self.system_prompt = system_prompt
        self.name = name
        self.tools: dict[str, Tool] = {}
        for item in tools:
            found = as_tool(item)
            if found.name in self.tools:
                raise ValueError(f"two tools are named {found.name!r}")
            self.tools[found.name] = found
        self.compaction = (
            Compaction(**compaction) if isinstance(compaction, Mapping) else compaction
        )
        #: What a conversation session gives the agent of its history (``session.py``).
        self.history_window = history_window
        self.durable = self._durable_store(durable)
        self.max_trips = max_trips
        self.max_attachment_bytes = max_attachment_bytes
        #: Answers of the first call of a run, reused where it is safe (docs/cache.md).
        self.cache = cache
        self.signature = agent_signature(
            name, model.provider, model.model, self.tools, max_trips=max_trips, version=version
        )

    def _durable_store(self, durable: SnapshotStore | bool | None) -> SnapshotStore | None:
        if durable is True:
            store = resolve_store(None)
            if store is None:
                raise AgentExecutionError(
                    f'agent "{self.name}" is durable=True, but WARLOCK_SESSIONS has no '
                    "SNAPSHOT_STORE: pass a store instead"
                )
            return store
        return durable or None

    def __repr__(self) -> str:
        return f"<ToolAgent {self.name} on {self.model.provider}/{self.model.model}>"

    # -- the protocol -------------------------------------------------------------------------

    def execute(
        self,
        input: Any,
        *,
        history: list[Message] | None = None,
        run_id: str | None = None,
        signal: AbortSignal | None = None,
        session_id: str | None = None,
        on_event: Emit | None = None,
    ) -> AgentResult:
        """Run to the final reply. A model or tool-loop failure, or a cancelled ``signal``,
        comes back as the result's ``error``. ``on_event`` gets the events ``stream`` yields,
        called from this thread as they happen (a websocket forwards them with no thread in
        between)."""
        run = self._start(input, history, run_id, session_id)
        return self._run(run, on_event, signal)

    def stream(
        self,
        input: Any,
        *,
        history: list[Message] | None = None,
        run_id: str | None = None,
        signal: AbortSignal | None = None,
        session_id: str | None = None,
    ) -> EventStream:
        """``execute`` as it happens: ``delta`` events with the reply's text as the model
        writes it, ``tool-call``/``tool-result`` and ``compaction`` events; then
        ``.result``."""
        run = self._start(input, history, run_id, session_id)
        return EventStream.run(lambda stream: self._run(run, stream.put, signal))

    def resume(
        self, run_id: str, *, force: bool = False, signal: AbortSignal | None = None, **_: Any
    ) -> AgentResult:
        """Continue the run ``run_id`` from its last snapshot; a run that had finished comes
        back without calling the model. ``AgentDriftError`` when the agent's definition
        changed, unless ``force``; ``AgentExecutionError`` without a durable store or
        snapshot."""
        if self.durable is None:
            raise AgentExecutionError(
                f'agent "{self.name}" has no durable store configured: pass durable= to '
                "resume its runs"
            )
        store, snapshot, version = load_run(
            self.durable, run_id, f'agent "{self.name}"', AgentExecutionError
        )
        refuse_cancelled(snapshot, run_id, force)
        if snapshot.get("agentName") != self.name:
            raise AgentExecutionError(
                f'run "{run_id}" belongs to agent {snapshot.get("agentName")!r}, not {self.name!r}'
            )
        saved = snapshot.get("signature")
        if saved and saved != self.signature and not force:
            raise AgentDriftError(run_id, saved, self.signature)
        run = _Run(snapshot, SnapshotWriter(store, "agent", None, version))
        if snapshot["status"] == "completed":
            return run.result()
        snapshot.update(signature=self.signature, status="running")
        snapshot.pop("error", None)
        # the prompt of today applies, as on every run
        run.messages[: prompt_length(run.messages)] = self._system()
        return self._run(run, None, signal, claim=True)

    # -- a run --------------------------------------------------------------------------------

    def _system(self) -> list[Message]:
        return [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []

    def _start(
        self,
        input: Any,
        history: list[Message] | None,
        run_id: str | None,
        session_id: str | None,
    ) -> _Run:
        run_id = run_id or new_run_id("agent")
        store = new_run_store(self.durable, run_id, f'agent "{self.name}"', AgentExecutionError)
        user = {"role": "user", "content": resolve_content(input, self.max_attachment_bytes)}
        snapshot: dict[str, Any] = {
            "runId": run_id,
            "agentName": self.name,
            "signature": self.signature,
            "input": input,
            # The history's messages are the caller's (a session's are shared with its
            # store's cache): the run only adds messages and never changes one.
            "messages": [*self._system(), *(history or []), user],
            "trips": 0,
            "toolCalls": [],
            "usage": {},
            "status": "running",
            "startedAt": now_iso(),
        }
        if self.system_prompt:
            snapshot["systemPrompt"] = self.system_prompt
        if session_id is not None:
            snapshot["sessionId"] = session_id
        run = _Run(snapshot, SnapshotWriter(store, "agent", None))
        run.save()
        return run

    def _run(
        self, run: _Run, emit: Emit | None, signal: AbortSignal | None, *, claim: bool = False
    ) -> AgentResult:
        r"""The trips until the final reply; a resume first ``claim``\ s the run (saves it
        under the version it loaded), so a second resumer runs nothing."""
        try:
            if claim:
                run.save()
            while run.snapshot["status"] == "running":
                self._trip(run, emit, signal)
        except CancelledElsewhere as cancelled:  # its progress is saved, as cancelled
            return run.stopped(cancelled.error)
        except Exception as error:
            # A run its signal stopped is cancelled (resumed only when forced), not failed.
            status = "cancelled" if signal is not None and signal.aborted else "failed"
            run.snapshot.update(status=status, error=str(error) or type(error).__name__)
            # Cancelled meanwhile is saved so too; the run's own error says more.
            with contextlib.suppress(CancelledElsewhere):
                run.save()
            return run.stopped(error)
        return run.result()

    def _trip(self, run: _Run, emit: Emit | None, signal: AbortSignal | None) -> None:
        _check(signal)
        if run.snapshot["trips"] >= self.max_trips:
            raise AgentExecutionError(
                f'agent "{self.name}" made {self.max_trips} trips without a final reply'
            )
        self._compact(run, emit)
        messages, schemas = list(run.messages), [found.schema for found in self.tools.values()]
        if self.cache is None:
            reply = self.model.chat(messages, schemas, _on_delta(emit, signal))
        else:
            call = CacheCall(
                self.model,
                messages,
                schemas,
                conversation=run.snapshot.get("sessionId"),
                first=run.snapshot["trips"] == 0,
                context=run.snapshot,
            )
            reply = self.cache.chat(call, _on_delta(emit, signal))
            if reply.cached:
                run.cached = reply.cached
                if emit is not None:
                    emit({"type": "cached", "step": reply.cached})
        run.add_trip(reply)
        calls = run.messages[-1].get("toolCalls") or []
        if not calls:
            run.snapshot["status"] = "completed"
        for call in calls:
            if emit is not None:
                emit({"type": "tool-call", **call})
            outcome = storable(self._call(call))
            run.messages.append(
                {
                    "role": "tool",
                    "toolCallId": call["id"],
                    "content": json.dumps(outcome, ensure_ascii=False, default=str),
                }
            )
            run.snapshot["toolCalls"].append({**call, **outcome})
            if emit is not None:
                emit({"type": "tool-result", "id": call["id"], "name": call["name"], **outcome})
        run.save()

    def _call(self, call: dict[str, Any]) -> dict[str, Any]:
        """``{"output": …}``, or ``{"error": …}`` for the model to read: a tool's failure is
        the model's to handle, not the run's."""
        found = self.tools.get(call["name"])
        if found is None:
            return {"error": f"there is no tool {call['name']!r}"}
        try:
            return {"output": found.run(call["input"])}
        except ToolArgumentsError as error:
            return {"error": str(error)}
        except Exception as error:
            logger.warning("tool %s of agent %s failed", call["name"], self.name, exc_info=True)
            return {"error": str(error) or type(error).__name__}

    def _compact(self, run: _Run, emit: Emit | None) -> None:
        compaction = self.compaction
        if compaction is None:
            return
        first = prompt_length(run.messages)
        if estimate_tokens(run.messages[first:]) <= compaction.after_tokens:
            return
        starts = [
            index
            for index in range(first, len(run.messages))
            if run.messages[index]["role"] == "user" and not is_summary(run.messages[index])
        ]
        if len(starts) <= compaction.keep:
            return
        cut = starts[-compaction.keep]
        replaced = run.messages[first:cut]
        summarize = compaction.summarize or self.model.summarize
        summary = {
            "role": "user",
            "content": f"Summary of the earlier conversation: {summarize(copy.deepcopy(replaced))}",
            "metadata": {"compaction": {"kind": "summary", "replaced": len(replaced)}},
        }
        run.messages[first:cut] = [summary]
        if emit is not None:
            emit({"type": "compaction", "replaced": len(replaced)})


class _Run:
    """One run's snapshot and how it is saved."""

    def __init__(self, snapshot: dict[str, Any], writer: SnapshotWriter) -> None:
        self.snapshot = snapshot
        self.writer = writer
        self.cached = ""  # how a semantic cache answered this run, if it did

    @property
    def id(self) -> str:
        return str(self.snapshot["runId"])

    @property
    def messages(self) -> list[Message]:
        messages: list[Message] = self.snapshot["messages"]
        return messages

    def save(self) -> None:
        self.writer.save(self.snapshot)

    def add_trip(self, reply: ChatReply) -> None:
        # What the model wrote is kept as text any store can hold (no NUL, no lone
        # surrogate); provider blocks are kept verbatim, as they are signed. Arguments no store
        # can keep (NaN, infinity, an integer beyond 64 bits) are kept as their text: the tool
        # refuses them (not a JSON object) before it runs, and the model is told.
        message: Message = {"role": "assistant", "content": storable_text(reply.text)}
        if reply.tool_calls:
            message["toolCalls"] = storable(
                [{**call, "input": plain_json(call.get("input"))} for call in reply.tool_calls]
            )
        if reply.blocks:
            message["blocks"] = reply.blocks
        self.messages.append(message)
        self.snapshot["trips"] += 1
        usage = self.snapshot["usage"]
        for key, count in reply.usage.items():
            usage[key] = usage.get(key, 0) + count

    def stopped(self, error: BaseException) -> AgentResult:
        """The result of a run that failed or was cancelled."""
        return AgentResult(
            messages=self.history(), error=error, run_id=self.id, usage=self.snapshot["usage"]
        )

    def history(self) -> list[Message]:
        """The messages without the system prompt."""
        return self.messages[prompt_length(self.messages) :]

    def result(self) -> AgentResult:
        messages = self.history()
        return AgentResult(
            messages=messages,
            text=content_text(messages[-1].get("content")) if messages else "",
            run_id=self.id,
            usage=dict(self.snapshot["usage"]),
            cached=self.cached,
        )


def _check(signal: AbortSignal | None) -> None:
    if signal is not None and signal.aborted:
        raise signal.reason or AgentCancelledError("the run was cancelled")


def _on_delta(emit: Emit | None, signal: AbortSignal | None) -> OnDelta | None:
    """Forwards the reply's text as ``delta`` events, and stops the model's stream once the
    signal is aborted."""
    if emit is None and signal is None:
        return None

    def on_delta(text: str) -> None:
        _check(signal)
        if emit is not None:
            emit({"type": "delta", "text": text})

    return on_delta
