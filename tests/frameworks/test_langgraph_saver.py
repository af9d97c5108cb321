"""``WarlockSaver``: LangGraph's own conformance suite for checkpointers, every capability,
base and extended, on SQLite and PostgreSQL, with the privacy settings off and on."""

from __future__ import annotations

import base64
import operator
import os
import threading
from collections.abc import AsyncGenerator
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client, override_settings
from django.utils import timezone
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from tests.frameworks.conftest import ON_POSTGRES, PRIVACY, run
from tests.host.test_processes import forked
from warlock_sessions.erasure import Person, erase
from warlock_sessions.errors import OfAnotherTenantError, TenantUnresolvedError
from warlock_sessions.frameworks.langgraph import WarlockSaver
from warlock_sessions.host.retention import Retention, prune
from warlock_sessions.models import GraphBlob, GraphCheckpoint, GraphThread, GraphWrite
from warlock_sessions.rotation import rotate
from warlock_sessions.tenancy import EVERY_TENANT, tenant_scope


def test_the_conformance_suite_passes_with_every_capability(alias: str, privacy: str) -> None:
    @checkpointer_test(name=f"WarlockSaver[{alias}, {privacy}]")
    async def saver() -> AsyncGenerator[WarlockSaver, None]:
        yield WarlockSaver(using=alias)

    report = run(validate(saver))
    failures = {
        name: result.failures for name, result in report.results.items() if not result.passed
    }
    assert failures == {}
    assert {name for name, result in report.results.items() if result.detected} == {
        capability.value for capability in ALL_CAPABILITIES
    }
    assert sum(result.tests_passed for result in report.results.values()) > 70, report


# -- a real graph on the saver ------------------------------------------------------------


class Order(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    steps: Annotated[list[str], operator.add]
    size: str


def taking_orders(saver: WarlockSaver) -> Any:
    """Greet, ask the size (a person answers: an interrupt), confirm."""

    def greet(state: Order) -> Order:
        return {"messages": [AIMessage("Hi! One pizza coming.")], "steps": ["greet"]}

    def ask(state: Order) -> Order:
        size = interrupt("Which size?")
        return {"size": size, "steps": ["ask"]}

    def confirm(state: Order) -> Order:
        return {"messages": [AIMessage(f"A {state['size']} pizza, then.")], "steps": ["confirm"]}

    graph = StateGraph(Order)
    for name, node in (("greet", greet), ("ask", ask), ("confirm", confirm)):
        graph.add_node(name, node)
    graph.add_edge(START, "greet")
    graph.add_edge("greet", "ask")
    graph.add_edge("ask", "confirm")
    graph.add_edge("confirm", END)
    return graph.compile(checkpointer=saver)


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_an_interrupted_graph_is_resumed_by_another_saver(alias: str, privacy: str) -> None:
    first = taking_orders(WarlockSaver(using=alias))
    said = first.invoke(
        {"messages": [HumanMessage("A pizza, card 4539 1488 0343 6467")]}, thread("t1")
    )
    assert said["__interrupt__"][0].value == "Which size?"
    assert first.get_state(thread("t1")).next == ("ask",)
    # Another process, another saver: the thread's state is read back from the tables.
    later = taking_orders(WarlockSaver(using=alias))
    done = later.invoke(Command(resume="large"), thread("t1"))
    assert done["steps"] == ["greet", "ask", "confirm"]
    assert done["messages"][-1].content == "A large pizza, then."
    said_first = done["messages"][0].content
    if privacy == "private":
        assert said_first == "A pizza, card [card]"
        kept = b"".join(
            bytes(value) for value in GraphBlob.objects.using(alias).values_list("value", flat=True)
        )
        assert b"pizza" not in kept and b"4539" not in kept  # sealed
    else:
        assert said_first == "A pizza, card 4539 1488 0343 6467"


def test_an_async_graph_is_interrupted_and_resumed(alias: str, privacy: str) -> None:
    graph = taking_orders(WarlockSaver(using=alias))

    async def order() -> dict[str, Any]:
        await graph.ainvoke({"messages": [HumanMessage("pizza")]}, thread("t2"))
        assert (await graph.aget_state(thread("t2"))).next == ("ask",)
        history = [state async for state in graph.aget_state_history(thread("t2"))]
        assert len(history) == 3  # input, greet, the interrupted step
        return await graph.ainvoke(Command(resume="small"), thread("t2"))

    assert run(order())["size"] == "small"


def test_time_travel_replays_and_forks_from_an_earlier_checkpoint(alias: str, privacy: str) -> None:
    graph = taking_orders(WarlockSaver(using=alias))
    graph.invoke({"messages": [HumanMessage("pizza")]}, thread("t3"))
    graph.invoke(Command(resume="medium"), thread("t3"))
    history = list(graph.get_state_history(thread("t3")))
    assert [state.next for state in history] == [
        (),
        ("confirm",),
        ("ask",),
        ("greet",),
        ("__start__",),
    ]
    before_ask = next(state for state in history if state.next == ("ask",))
    # Replay: from the checkpoint before the question, the graph asks again.
    replayed = graph.invoke(None, before_ask.config)
    assert replayed["__interrupt__"][0].value == "Which size?"
    # Fork: the same checkpoint with the size changed, resumed on its own branch.
    forked_config = graph.update_state(before_ask.config, {"size": "small"}, as_node="ask")
    done = graph.invoke(None, forked_config)
    assert done["messages"][-1].content == "A small pizza, then."
    assert graph.get_state(thread("t3")).values["size"] == "small"
    branches = {
        state.parent_config["configurable"]["checkpoint_id"]
        for state in graph.get_state_history(thread("t3"))
        if state.parent_config
    }
    assert before_ask.config["configurable"]["checkpoint_id"] in branches


RUNS: dict[str, int] = {}


def fanned_out(saver: WarlockSaver, fail_once: set[str]) -> Any:
    """Two branches in one step; ``fail_once`` names a branch that fails on its first run."""

    def branch(name: str) -> Any:
        def node(state: Order) -> Order:
            RUNS[name] = RUNS.get(name, 0) + 1
            if name in fail_once:
                fail_once.discard(name)
                raise RuntimeError(f"{name} failed")
            return {"steps": [name]}

        return node

    graph = StateGraph(Order)
    graph.add_node("kitchen", branch("kitchen"))
    graph.add_node("delivery", branch("delivery"))
    graph.add_edge(START, "kitchen")
    graph.add_edge(START, "delivery")
    graph.add_edge("kitchen", END)
    graph.add_edge("delivery", END)
    return graph.compile(checkpointer=saver)


def test_a_failed_branch_is_retried_without_running_its_sibling_again(
    alias: str, privacy: str
) -> None:
    RUNS.clear()
    graph = fanned_out(WarlockSaver(using=alias), {"delivery"})
    with pytest.raises(RuntimeError, match="delivery failed"):
        graph.invoke({"steps": []}, thread("t4"), durability="sync")
    # The kitchen's write waits on the checkpoint, pending, with the delivery's error.
    latest = WarlockSaver(using=alias).get_tuple(thread("t4"))
    assert latest is not None and latest.pending_writes is not None
    pending = {(channel, str(value)) for _, channel, value in latest.pending_writes}
    assert ("steps", "['kitchen']") in pending
    assert ("__error__", "RuntimeError('delivery failed')") in pending
    done = fanned_out(WarlockSaver(using=alias), set()).invoke(None, thread("t4"))
    assert sorted(done["steps"]) == ["delivery", "kitchen"]
    assert RUNS == {"kitchen": 1, "delivery": 2}


def _cooking_then_dying(alias: str, marks: str) -> None:
    """A process that runs the first node, then dies in the second (no clean exit)."""

    def cook(state: Order) -> Order:
        Path(marks, "cook").write_text(str(int(Path(marks, "cook").read_text() or 0) + 1))
        return {"steps": ["cook"]}

    def deliver(state: Order) -> Order:
        os._exit(3)

    graph = StateGraph(Order)
    graph.add_node("cook", cook)
    graph.add_node("deliver", deliver)
    graph.add_edge(START, "cook")
    graph.add_edge("cook", "deliver")
    # Each step's checkpoint written before the next step starts (LangGraph's "async"
    # durability writes it while the next step runs: a crash there may lose it).
    compiled = graph.compile(checkpointer=WarlockSaver(using=alias))
    compiled.invoke({"steps": []}, thread("t5"), durability="sync")


@ON_POSTGRES
def test_a_process_that_dies_between_steps_is_resumed_by_another(
    alias: str, tmp_path: Path
) -> None:
    (tmp_path / "cook").write_text("0")
    process = forked(_cooking_then_dying, alias, str(tmp_path))
    process.join(60)
    assert process.exitcode == 3
    cooked: list[str] = []

    def deliver(state: Order) -> Order:
        cooked.append("delivered")
        return {"steps": ["deliver"]}

    graph = StateGraph(Order)
    graph.add_node("cook", lambda state: {"steps": ["cook again?"]})
    graph.add_node("deliver", deliver)
    graph.add_edge(START, "cook")
    graph.add_edge("cook", "deliver")
    resumed = graph.compile(checkpointer=WarlockSaver(using=alias))
    assert resumed.get_state(thread("t5")).next == ("deliver",)
    assert resumed.invoke(None, thread("t5"))["steps"] == ["cook", "deliver"]
    assert (tmp_path / "cook").read_text() == "1" and cooked == ["delivered"]


def test_a_thread_is_its_owners_and_its_tenants(alias: str) -> None:
    ana = User.objects.db_manager(alias).create_user("acme-ana")
    with override_settings(WARLOCK_SESSIONS={"TENANT_RESOLVER": "tests.test_tenants.tenant_of"}):
        with tenant_scope("acme"):
            taking_orders(WarlockSaver(owner=ana, using=alias)).invoke({"steps": []}, thread("t6"))
            header = GraphThread.objects.using(alias).get(pk="t6")
            assert (header.user_id, header.tenant) == (ana.pk, "acme")
            assert set(GraphCheckpoint.objects.using(alias).values_list("tenant", flat=True)) == {
                "acme"
            }
        with tenant_scope("globex"):
            other = taking_orders(WarlockSaver(using=alias))
            assert other.get_state(thread("t6")).values == {}  # not globex's to read
            with pytest.raises(OfAnotherTenantError):
                other.invoke({"steps": []}, thread("t6"))


def test_the_admin_rotation_erasure_and_retention_cover_a_thread(alias: str) -> None:
    key = PRIVACY["private"]["ENCRYPTION_KEYS"]["k1"]
    ana = User.objects.db_manager(alias).create_user("ana")
    sealed = {"ENCRYPTION_KEYS": {"k1": key}, "REDACT": ["card"]}
    with override_settings(WARLOCK_SESSIONS=sealed):
        graph = taking_orders(WarlockSaver(owner=ana, using=alias))
        graph.invoke({"messages": [HumanMessage("card 4539 1488 0343 6467")]}, thread("t7"))
        browser = Client()
        browser.force_login(User.objects.db_manager(alias).create_superuser("root", "r@x.io", "pw"))
        page = browser.get("/admin/warlock_sessions/graphthread/t7/change/")
        assert page.status_code == 200
        assert b"Hi! One pizza coming." in page.content and b"card [card]" in page.content
    rotated = {"ENCRYPTION_KEYS": {"k2": base64.b64encode(b"r" * 32).decode(), "k1": key}}
    with override_settings(WARLOCK_SESSIONS=rotated):
        done = {progress.table: progress for progress in rotate(using=alias)}
        assert done["graph channel values"].read > 0
        for model in (GraphBlob, GraphCheckpoint):
            kept = model.objects.using(alias).exclude(kind="empty").values_list("kind", flat=True)
            assert kept and all(kind.endswith("+wse1") for kind in kept)
    with override_settings(WARLOCK_SESSIONS={"ENCRYPTION_KEYS": rotated["ENCRYPTION_KEYS"]}):
        values = [bytes(v) for v in GraphBlob.objects.using(alias).values_list("value", flat=True)]
        assert values and all(v.startswith(b"wse1.k2.") for v in values if v)
        assert taking_orders(WarlockSaver(using=alias)).get_state(thread("t7")).next == ("ask",)
        taking_orders(WarlockSaver(using=alias)).invoke({"steps": []}, thread("t8"))
        assert erase(Person(user=ana.pk))["graph threads"] == 1
        assert not GraphCheckpoint.objects.using(alias).filter(thread_id="t7").exists()
        assert not GraphBlob.objects.using(alias).filter(thread_id="t7").exists()
        later = timezone.now() + timedelta(days=91)
        assert prune(Retention(), now=later, pause=-1)["graph threads"] == 1  # t8, idle
        assert not GraphThread.objects.using(alias).exists()


TENANTS = {"TENANT_RESOLVER": "tests.test_tenants.tenant_of"}


def root(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    if checkpoint_id:
        config["configurable"]["checkpoint_id"] = checkpoint_id
    return config


def test_another_tenant_cannot_write_into_a_thread_even_knowing_its_ids(alias: str) -> None:
    """A globex request naming acme's thread, checkpoint and task ids (an interrupt's
    resume, a pending write) is refused; acme's thread is as it was."""
    with override_settings(WARLOCK_SESSIONS=TENANTS):
        with tenant_scope("acme"):
            acme = WarlockSaver(using=alias)
            where = acme.put(
                root("victim"), empty_checkpoint(), {"source": "input", "step": -1}, {}
            )
            acme.put_writes(where, [("__interrupt__", "which size?")], task_id="task1")
        with tenant_scope("globex"):
            globex = WarlockSaver(using=alias)
            assert globex.get_tuple(where) is None
            for writes in ([("__interrupt__", "EVIL")], [("__resume__", "EVIL")]):
                with pytest.raises(OfAnotherTenantError):
                    globex.put_writes(where, writes, task_id="task1")
        with tenant_scope("acme"):
            found = acme.get_tuple(where)
            assert found is not None and found.pending_writes is not None
            assert [value for _, _, value in found.pending_writes] == ["which size?"]


def test_writes_from_a_thread_with_no_scope_need_one_this_saver_met(alias: str) -> None:
    """LangGraph's executor threads lose the caller's scope: the saver writes there in the
    scope it last met the thread in, and code with no scope for a thread it never met in one
    writes nothing."""
    failures: list[BaseException] = []

    def unscoped(saver: WarlockSaver, where: Any, value: str) -> None:
        try:
            saver.put_writes(where, [("__resume__", value)], task_id="t")
        except BaseException as error:
            failures.append(error)
        finally:
            connections.close_all()

    with override_settings(WARLOCK_SESSIONS=TENANTS):
        with tenant_scope("acme"):
            acme = WarlockSaver(using=alias)
            where = acme.put(
                root("victim2"), empty_checkpoint(), {"source": "input", "step": -1}, {}
            )
        for saver, value in ((WarlockSaver(using=alias), "EVIL"), (acme, "large")):
            thread = threading.Thread(target=unscoped, args=(saver, where, value))
            thread.start()
            thread.join(30)
        assert [type(error) for error in failures] == [TenantUnresolvedError]
        with tenant_scope("acme"):
            found = acme.get_tuple(where)
            assert found is not None and [w[2] for w in found.pending_writes or []] == ["large"]


def test_an_operators_copy_of_a_thread_stays_its_tenants(alias: str) -> None:
    with override_settings(WARLOCK_SESSIONS=TENANTS):
        with tenant_scope("acme"):
            WarlockSaver(using=alias).put(root("src"), empty_checkpoint(), {"step": -1}, {})
        with tenant_scope(EVERY_TENANT):
            WarlockSaver(using=alias).copy_thread("src", "dst")
            assert GraphThread.objects.using(alias).get(pk="dst").tenant == "acme"
        with tenant_scope("acme"):
            assert WarlockSaver(using=alias).get_tuple(root("dst")) is not None


@ON_POSTGRES
def test_a_put_while_runs_are_deleted_keeps_its_values(alias: str) -> None:
    """``delete_for_runs`` holds the thread's header: a ``put`` made meanwhile waits, and
    its channel value is not taken for one no checkpoint reads."""
    saver = WarlockSaver(using=alias)
    first = empty_checkpoint()
    first["channel_values"] = {"a": "old"}
    first["channel_versions"] = {"a": saver.get_next_version(None, None)}
    where = saver.put(
        root("pr"), first, {"run_id": "run-1", "step": 0}, dict(first["channel_versions"])
    )
    second = create_checkpoint(first, None, 1)
    second["channel_values"] = {"a": "NEW"}
    second["channel_versions"] = {"a": saver.get_next_version(first["channel_versions"]["a"], None)}
    putting: list[threading.Thread] = []

    def put_meanwhile() -> None:
        try:
            WarlockSaver(using=alias).put(
                where, second, {"run_id": "run-2", "step": 1}, dict(second["channel_versions"])
            )
        finally:
            connections.close_all()

    class Racing(WarlockSaver):
        def _forget_unread_values(self, thread_id: str, namespace: str) -> None:
            if not putting:
                putting.append(threading.Thread(target=put_meanwhile))
                putting[0].start()
                putting[0].join(0.5)
                assert putting[0].is_alive()  # waiting for the header
            super()._forget_unread_values(thread_id, namespace)

    Racing(using=alias).delete_for_runs(["run-1"])
    putting[0].join(30)
    found = saver.get_tuple(root("pr"))
    assert found is not None and found.checkpoint["channel_values"] == {"a": "NEW"}


def test_message_likes_are_redacted_wherever_they_are_kept(alias: str) -> None:
    """The docs' own shape, ``("user", text)``, and ``{"role", "content"}`` dicts: redacted in
    the input's channel value, the pending writes and a node's reply."""

    def answer(state: Order) -> Order:
        return {"messages": [("assistant", "your card 4539 1488 0343 6467, noted")]}

    graph = StateGraph(Order)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    with override_settings(WARLOCK_SESSIONS={"REDACT": ["card"]}):
        compiled = graph.compile(checkpointer=WarlockSaver(using=alias))
        said = {
            "messages": [
                ("user", "card 4539 1488 0343 6467"),
                {"role": "user", "content": "and 4539148803436467"},
            ]
        }
        compiled.invoke(said, thread("t9"))
        kept = b"".join(
            bytes(v) for v in GraphBlob.objects.using(alias).values_list("value", flat=True)
        )
        kept += b"".join(
            bytes(v) for v in GraphWrite.objects.using(alias).values_list("value", flat=True)
        )
        assert b"4539" not in kept and b"[card]" in kept
        messages = compiled.get_state(thread("t9")).values["messages"]
        assert [m.content for m in messages] == [
            "card [card]",
            "and [card]",
            "your card [card], noted",
        ]
