"""ToolAgent on the offline model and on a scripted chat model: tool calls and their
arguments, streaming, durable snapshots with a real crash and resume, drift, compaction
(scenario 29), attachments (scenario 28) and cancellation; through conversation sessions."""

from __future__ import annotations

import json
import multiprocessing
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from warlock_sessions.conversations import ToolAgent, session, tool
from warlock_sessions.conversations.toolagent import is_summary
from warlock_sessions.errors import (
    AgentCancelledError,
    AgentDriftError,
    AgentExecutionError,
    AttachmentError,
)
from warlock_sessions.locks import AbortSignal
from warlock_sessions.providers.chat import ChatReply, ToolSchema
from warlock_sessions.providers.offline import OfflineChatModel
from warlock_sessions.snapshots import FileSnapshotStore, MemorySnapshotStore, SqliteSnapshotStore


@tool
def calculate(expression: str) -> int:
    """Add the whole numbers in an expression like 2+3."""
    return sum(int(term) for term in expression.split("+"))


@dataclass
class ScriptedModel:
    """A chat model answering from a list: each reply is text, or tool calls as
    ``[(name, input), …]``; it records the messages of every call."""

    replies: list[Any]
    provider: str = "scripted"
    model: str = "v1"
    seen: list[list[dict[str, Any]]] = field(default_factory=list)

    def chat(self, messages: Any, tools: list[ToolSchema], on_delta: Any) -> ChatReply:
        self.seen.append(messages)
        reply = self.replies[len(self.seen) - 1]
        if isinstance(reply, str):
            for word in reply.split(" "):
                if on_delta is not None:
                    on_delta(word + " ")
            return ChatReply(text=reply, usage={"input_tokens": 3, "output_tokens": 2})
        calls = [
            {"id": f"t{len(self.seen)}-{index}", "name": name, "input": input}
            for index, (name, input) in enumerate(reply)
        ]
        return ChatReply(tool_calls=calls, usage={"input_tokens": 3})

    def summarize(self, messages: list[dict[str, Any]]) -> str:
        return f"{len(messages)} messages"


def test_the_offline_agent_remembers_and_calls_tools(make_store: Any) -> None:
    agent = ToolAgent(OfflineChatModel(), "You are helpful.", [calculate])
    chat = session("c", make_store(), agent)
    assert chat.send("My name is Sara.").text.startswith("Nice to meet you, Sara.")
    assert chat.send("What is my name?").text == "Your name is Sara."
    result = chat.send("please calculate 2+3")
    assert result.text == "The calculate tool says: 5"
    assert [m["role"] for m in chat.history()[-4:]] == ["user", "assistant", "tool", "assistant"]
    assert chat.history()[-3]["toolCalls"] == [
        {"id": "call_1", "name": "calculate", "input": {"expression": "2+3"}}
    ]
    assert all(m["role"] != "system" for m in chat.history())


def test_streaming_gives_deltas_and_tool_activity_in_order() -> None:
    agent = ToolAgent(OfflineChatModel(), tools=[calculate])
    chat = session("s", MemorySnapshotStore(), agent)
    stream = chat.stream("calculate 40+2")
    events = list(stream)
    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["tool-call", "tool-result"] and set(kinds[2:]) == {"delta"}
    assert events[1] == {"type": "tool-result", "id": "call_1", "name": "calculate", "output": 42}
    text = "".join(event["text"] for event in events[2:])
    assert text == stream.result.text == "The calculate tool says: 42"
    assert len(events) - 2 == len(text.split())  # word by word


def test_bad_tool_arguments_and_unknown_tools_go_back_to_the_model() -> None:
    ran: list[str] = []

    @tool
    def note(text: str) -> str:
        ran.append(text)
        return "noted"

    model = ScriptedModel(
        [[("note", {"text": 3}), ("nothing", {})], [("note", "not json")], "Done."]
    )
    result = ToolAgent(model, tools=[note]).execute("hi")
    assert result.error is None and result.text == "Done." and ran == []
    results = [json.loads(m["content"]) for m in result.messages if m["role"] == "tool"]
    assert results[0]["error"] == "bad arguments for note: 3 is not of type 'string'"
    assert results[1] == {"error": "there is no tool 'nothing'"}
    assert results[2] == {"error": "the arguments of note were not a JSON object"}


@pytest.mark.parametrize(
    "arguments",
    [
        {"amount": float("nan")},
        {"amount": float("inf")},
        {"amount": 10**30},
        {"nested": [{"x": -float("inf")}]},
    ],
)
def test_arguments_no_store_can_keep_never_run_a_tool_nor_fail_the_save(
    arguments: dict[str, Any], make_store: Any
) -> None:
    """What ``json.loads`` accepts from a model (NaN, Infinity, 1e999, 30-digit integers) once
    ran the tool and then failed the save, leaving the conversation pending for good."""
    ran: list[Any] = []

    @tool
    def pay(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "paid"

    model = ScriptedModel([[("pay", arguments)], "Could not pay."])
    chat = session("unstorable", make_store(), ToolAgent(model, tools=[pay]))
    result = chat.send("pay it")
    assert result.error is None and ran == []
    stored = chat.load()
    assert stored is not None and "pending" not in stored
    outcome = json.loads(next(m["content"] for m in stored["messages"] if m["role"] == "tool"))
    assert outcome == {"error": "the arguments of pay were not a JSON object"}


def test_a_failing_tool_is_reported_to_the_model() -> None:
    @tool
    def explode() -> None:
        raise RuntimeError("boom")

    model = ScriptedModel([[("explode", {})], "Sorry."])
    result = ToolAgent(model, tools=[explode]).execute("go")
    assert result.text == "Sorry."
    assert json.loads(result.messages[2]["content"]) == {"error": "boom"}


def test_a_model_that_never_stops_calling_tools_fails_the_run() -> None:
    model = ScriptedModel([[("calculate", {"expression": "1+1"})]] * 3)
    chat = session("loop", MemorySnapshotStore(), ToolAgent(model, tools=[calculate], max_trips=3))
    result = chat.send("x")
    assert isinstance(result.error, AgentExecutionError) and "3 trips" in str(result.error)
    assert chat.history() == [] and "pending" not in chat.load()  # type: ignore[operator]


def test_the_system_prompt_is_sent_every_run_and_never_stored() -> None:
    model = ScriptedModel(["one", "two"])
    agent = ToolAgent(model, "Be brief.")
    chat = session("p", MemorySnapshotStore(), agent)
    chat.send("a")
    agent.system_prompt = "Be kind."
    chat.send("b")
    assert model.seen[0][0] == {"role": "system", "content": "Be brief."}
    assert model.seen[1][0] == {"role": "system", "content": "Be kind."}
    assert [m["content"] for m in chat.history()] == ["a", "one", "b", "two"]


def test_a_cancelled_run_changes_nothing() -> None:
    signal = AbortSignal()

    class Cancelling(ScriptedModel):
        def chat(self, messages: Any, tools: Any, on_delta: Any) -> ChatReply:
            signal.abort()
            return super().chat(messages, tools, on_delta)

    chat = session("x", MemorySnapshotStore(), ToolAgent(Cancelling(["a b c"])))
    result = chat.stream("hi", signal=signal).result
    assert isinstance(result.error, AgentCancelledError)
    assert chat.history() == [] and "pending" not in chat.load()  # type: ignore[operator]


# -- durable runs ---------------------------------------------------------------------------


def durable_stores(tmp_path: Path) -> list[Any]:
    return [FileSnapshotStore(tmp_path / "runs"), SqliteSnapshotStore(tmp_path / "runs.sqlite")]


def crashing_agent(runs: Any, log: Path, *, crash: bool) -> ToolAgent:
    """Trip 1 calls ``first``, trip 2 calls ``second`` (which kills the process when
    ``crash``), trip 3 answers. Each tool run is logged in ``log``."""

    def first() -> str:
        with log.open("a") as out:
            out.write("first\n")
        return "one"

    def second() -> str:
        with log.open("a") as out:
            out.write("second\n")
        if crash:
            os._exit(9)
        return "two"

    model = ScriptedModel([[("first", {})], [("second", {})], "All done."])
    return ToolAgent(model, tools=[first, second], durable=runs)


@pytest.mark.parametrize("backend", [0, 1], ids=["file", "sqlite"])
def test_a_crash_mid_run_resumes_without_running_finished_tools(
    tmp_path: Path, backend: int
) -> None:
    log = tmp_path / "tools.log"
    conversations = FileSnapshotStore(tmp_path / "conversations")

    def child() -> None:
        agent = crashing_agent(durable_stores(tmp_path)[backend], log, crash=True)
        session("c", conversations, agent).send("go")

    process = multiprocessing.get_context("fork").Process(target=child)
    process.start()
    process.join(30)
    assert process.exitcode == 9
    assert log.read_text() == "first\nsecond\n"
    record = session("c", conversations, ToolAgent(OfflineChatModel())).load()
    assert record is not None and record["messages"] == [] and record["pending"]["input"] == "go"

    # the model's script restarts at the trip the snapshot stopped before
    agent = crashing_agent(durable_stores(tmp_path)[backend], log, crash=False)
    agent.model.seen.append([])  # type: ignore[attr-defined]
    chat = session("c", conversations, agent)
    result = chat.resume()
    assert result is not None and result.text == "All done."
    assert log.read_text() == "first\nsecond\nsecond\n"  # first did not run again
    assert [m["role"] for m in chat.history()] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert chat.load()["turns"] == 1 and chat.resume() is None  # type: ignore[index]


def test_resume_of_a_finished_run_calls_no_model_and_drift_is_refused(tmp_path: Path) -> None:
    runs = MemorySnapshotStore()
    model = ScriptedModel(["Hi."])
    agent = ToolAgent(model, tools=[calculate], durable=runs)
    done = agent.execute("hello", run_id="agent-1")
    again = agent.resume("agent-1")
    assert again.messages == done.messages and again.text == "Hi." and len(model.seen) == 1

    changed = ToolAgent(ScriptedModel(["Hi."]), tools=[], durable=runs)
    with pytest.raises(AgentDriftError) as drift:
        changed.resume("agent-1")
    assert drift.value.code == "AGENT_DRIFT" and drift.value.saved_signature == agent.signature
    assert changed.resume("agent-1", force=True).text == "Hi."
    with pytest.raises(AgentExecutionError, match="already has a run"):
        agent.execute("again", run_id="agent-1")
    with pytest.raises(AgentExecutionError, match="no durable store"):
        ToolAgent(model).resume("agent-1")
    with pytest.raises(AgentExecutionError, match="no snapshot"):
        agent.resume("agent-2")


# -- compaction and attachments ---------------------------------------------------------------


def test_compaction_keeps_the_newest_turns_and_a_marked_summary(make_store: Any) -> None:
    """Scenario 29, on every conversation store."""
    model = ScriptedModel(["r1", [("calculate", {"expression": "1+2"})], "r2", "r3", "r4"])
    agent = ToolAgent(model, "sys", [calculate], compaction={"after_tokens": 1, "keep": 1})
    chat = session("long", make_store(), agent)
    for text in ("first turn", "second turn", "third turn"):
        chat.send(text)
    stored = chat.history()
    assert is_summary(stored[0]) and stored[0]["role"] == "user"
    assert stored[0]["metadata"]["compaction"] == {"kind": "summary", "replaced": 5}
    assert [m.get("content") for m in stored[1:]] == ["third turn", "r3"]
    chat.send("fourth turn")
    first_trip = model.seen[-1]
    assert first_trip[0]["role"] == "system" and is_summary(first_trip[1])
    assert first_trip[1]["metadata"]["compaction"]["replaced"] == 3  # summary, u3, r3
    assert [m["content"] for m in chat.history()[1:]] == ["fourth turn", "r4"]


def test_compaction_never_parts_a_tool_call_from_its_result(make_store: Any) -> None:
    model = ScriptedModel(["r1", [("calculate", {"expression": "1+2"})], "r2"])
    agent = ToolAgent(model, tools=[calculate], compaction={"after_tokens": 1, "keep": 2})
    chat = session("pairs", make_store(), agent)
    chat.send("one")
    chat.send("two")
    roles = [m["role"] for m in chat.history()]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    with pytest.raises(ValueError, match="keep"):
        ToolAgent(model, compaction={"after_tokens": 10, "keep": 0})


def test_attachments_are_stored_resolved(tmp_path: Path, make_store: Any) -> None:
    """Scenario 28, on every conversation store: the file changes after turn 1; turn 2's
    history holds turn 1's bytes."""
    attachment = tmp_path / "notes.txt"
    attachment.write_text("version one")
    model = ScriptedModel(["Read it.", "Still have it."])
    chat = session("files", make_store(), ToolAgent(model))
    chat.send([{"type": "text", "text": "read this"}, {"type": "file", "path": str(attachment)}])
    attachment.write_text("version two, longer")
    chat.send("and again?")
    part = model.seen[1][0]["content"][1]
    assert part == {
        "type": "file",
        "name": "notes.txt",
        "mediaType": "text/plain",
        "data": "dmVyc2lvbiBvbmU=",  # "version one"
    }
    assert chat.history()[0]["content"][1] == part


def test_bad_attachments_are_refused_before_the_run(tmp_path: Path) -> None:
    model = ScriptedModel(["never"])
    chat = session("bad", MemorySnapshotStore(), ToolAgent(model, max_attachment_bytes=4))
    big = tmp_path / "big.bin"
    big.write_bytes(b"12345")
    for content, message in [
        ([{"type": "file", "path": str(tmp_path / "missing")}], "cannot read"),
        ([{"type": "file", "path": str(big)}], "over 4 bytes"),
        ([{"type": "video", "path": str(big)}], "text, image or file"),
        ([], "non-empty list"),
    ]:
        with pytest.raises(AttachmentError, match=message):
            chat.send(content)
    assert model.seen == [] and chat.history() == []


def test_definitions_are_checked() -> None:
    with pytest.raises(ValueError, match="tool name"):
        tool(lambda: None, name="has space")
    with pytest.raises(TypeError, match="parameters="):

        @tool
        def odd(when: object) -> None: ...

    with pytest.raises(ValueError, match="two tools"):
        ToolAgent(OfflineChatModel(), tools=[calculate, calculate])
    with pytest.raises(AgentExecutionError, match="SNAPSHOT_STORE"):
        ToolAgent(OfflineChatModel(), durable=True)


def test_streamed_turns_run_in_a_forked_child() -> None:
    """A server that forks its workers after a turn ran in the parent (or a test's live
    server) once handed its streamed turns to the parent's threads, which a fork does not
    copy: they waited for ever."""
    from warlock_sessions.conversations.agent import stream_threads

    assert stream_threads().submit(lambda: "parent").result(5) == "parent"
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit code
        ran = False
        try:
            ran = stream_threads().submit(lambda: "child").result(5) == "child"
        finally:
            os._exit(0 if ran else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
