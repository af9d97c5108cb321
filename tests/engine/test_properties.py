"""Properties over random flows and input sequences (Hypothesis).

For every turn: a replay gives a deep-equal result; the inputs are never mutated; the output blob
passes assert_session and is storable JSON; the limits hold (<= 50 inputs, <= 50 outcome lines per
run, <= 50 always-claims per flow and anchor, hop <= 5, at most one asking run). Every scheduled
wake, fired, changes the session or is answered stale-wake/silence-broken, never an exception.
"""

from __future__ import annotations

import copy
import functools
import zlib
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from warlock_sessions.engine import (
    Agent,
    Deferral,
    FakeClock,
    MemoryScheduler,
    Spoken,
    TurnResult,
    Understanding,
    assert_session,
    encode_session,
    turn,
)
from warlock_sessions.engine.isotime import ms_from_iso

FIELDS = {
    "nome": {"type": "string"},
    "idade": {"type": "integer"},
    "ok": {"type": "boolean"},
    "cor": {"type": "string", "enum": ["azul", "verde"]},
}
FLOW_IDS = ["f0", "f1", "f2"]
EVENTS = ["pago", "lido"]


def _roll(*parts: object) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


class DeterministicModel:
    """Answers derived from the request alone, so replays see the same replies."""

    def understand(self, request: Any) -> Understanding:
        seed = (request.text, request.now.isoformat())
        return Understanding(
            flows={flow.id: _roll(seed, flow.id) % 101 for flow in request.message_flows},
            mentions={
                flow.id: _roll(seed, "m", flow.id) % 2 == 0 for flow in request.mention_flows
            },
            branches={branch.key: _roll(seed, branch.key) % 3 == 0 for branch in request.branches},
            fields={
                name: ["Ana", "41", "sim", "frio", None][_roll(seed, name) % 5]
                for name in request.fields
            },
        )

    def speak(self, request: Any) -> Spoken | Deferral:
        roll = _roll(request.input_kind, request.text, request.now.isoformat(), request.data)
        if roll % 7 == 0:
            return Deferral(
                code="provider-unavailable",
                retryable=roll % 2 == 0,
                reset_at_ms=None if roll % 3 else 1_800_000_000_000,
            )
        pending = getattr(request.talk, "pending", [])
        return Spoken(
            message=f"r{roll % 100}",
            fields={name: ["Ana", "7", "não", "azul", None][(roll >> 3) % 5] for name in pending},
        )


def _action(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    roll = _roll(ctx.key) % 5
    return [
        {"ok": True},
        {"ok": True, "spoke": True},
        {"skipped": "no"},
        {"failed": "boom"},
        {"defer": "1h", "detail": "later"},
    ][roll]


def _raise(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    raise RuntimeError("action crashed")


@st.composite
def next_moves(draw: Any, step_ids: list[str]) -> Any:
    return draw(
        st.one_of(
            st.sampled_from([*step_ids, "end"]),
            st.builds(
                lambda s, c: {"step": s, "clear": c},
                st.sampled_from(step_ids),
                st.lists(st.sampled_from(list(FIELDS)), max_size=1),
            ),
            st.builds(lambda f: {"flow": f}, st.sampled_from(FLOW_IDS)),
        )
    )


@st.composite
def steps(draw: Any, count: int) -> list[dict[str, Any]]:
    ids = [f"s{i}" for i in range(count)]
    out = []
    for step_id in ids:
        kind = draw(st.sampled_from(["collect", "prompt", "say", "do", "wait", "wait_event", "if"]))
        step: dict[str, Any] = {"id": step_id}
        if kind == "collect":
            step["collect"] = draw(
                st.lists(st.sampled_from(list(FIELDS)), min_size=1, max_size=2, unique=True)
            )
            step["maxAsks"] = draw(st.integers(1, 3))
            if draw(st.booleans()):
                step["branches"] = [
                    {"when": "quer sair", "then": draw(next_moves(ids))},
                    {"if": {"known": ["nome"]}, "then": draw(next_moves(ids))},
                ]
        elif kind == "prompt":
            step["prompt"] = "Olá {{data.nome|você}}"
        elif kind == "say":
            step["say"] = "Oi {{data.nome|}}"
            step["once"] = draw(st.booleans())
        elif kind == "do":
            step["do"] = draw(st.sampled_from(["act", "crash"]))
            if draw(st.booleans()):
                step["onFail"] = draw(next_moves(ids))
        elif kind == "wait":
            step["wait"] = draw(st.sampled_from(["3s", "1h", "1d"]))
            if draw(st.booleans()):
                step["else"] = draw(next_moves(ids))
        elif kind == "wait_event":
            step["wait"] = {"event": draw(st.sampled_from(EVENTS)), "upTo": "2d"}
        else:
            step["if"] = draw(
                st.sampled_from(
                    [{"known": ["nome"]}, {"equals": {"ok": True}}, {"silenced": False}]
                )
            )
            if draw(st.booleans()):
                step["else"] = draw(next_moves(ids))
        if draw(st.booleans()):
            step["then"] = draw(next_moves(ids))
        out.append(step)
    return out


@st.composite
def agents(draw: Any) -> Agent:
    flows = []
    for flow_id in FLOW_IDS[: draw(st.integers(1, 3))]:
        trigger = draw(
            st.sampled_from(
                [
                    None,
                    {"message": []},
                    {"message": ["oi", "!tchau"]},
                    {"mention": []},
                    {"mention": ["promo"]},
                    {"silence": "1h"},
                    {"event": "pago"},
                    {"event": "lido", "after": "10m"},
                    {"message": ["preço"], "repeat": "always"},
                    {"message": ["ajuda"], "repeat": {"cooldown": "30m"}},
                ]
            )
        )
        flow: dict[str, Any] = {"id": flow_id, "steps": draw(steps(draw(st.integers(0, 4))))}
        if trigger is not None:
            flow["on"] = [trigger]
        flow["onEnd"] = draw(st.sampled_from(["end", "stay", "reset"]))
        if draw(st.integers(0, 4)) == 0:
            flow["anchor"] = "lead"
        flows.append(flow)
    # A flow move may name a flow this agent does not have; such moves are trimmed to "end".
    known = {flow["id"] for flow in flows}
    for flow in flows:
        for step in flow["steps"]:
            for key in ("then", "else", "onFail"):
                if (
                    isinstance(step.get(key), dict)
                    and "flow" in step[key]
                    and step[key]["flow"] not in known
                ):
                    step[key] = "end"
            for branch in step.get("branches", []):
                if isinstance(branch["then"], dict) and branch["then"].get("flow") not in known | {
                    None
                }:
                    branch["then"] = "end"
    return Agent(
        flows,
        fields=FIELDS,
        actions={"act": _action, "crash": _raise},
        idle=draw(st.sampled_from([None, "silent"])),
        events={"lido": {"direction": "inbound"}},
    )


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("message"),
            st.sampled_from(["m1", "m2", "m3", "m4", None]),
            st.sampled_from(["oi", "promo", "quer sair", "Ana 41"]),
        ),
        st.tuples(st.just("wake"), st.just(None), st.just(None)),
        st.tuples(st.just("stale"), st.sampled_from(["nope", "silence:f0:s1:1"]), st.just(None)),
        st.tuples(st.just("event"), st.sampled_from(EVENTS), st.sampled_from(["e1", "e2", "e3"])),
        st.tuples(
            st.just("start"), st.sampled_from([*FLOW_IDS, "ghost"]), st.sampled_from(["k1", "k2"])
        ),
        st.tuples(st.just("advance"), st.sampled_from(["1m", "30m", "2h", "3d"]), st.just(None)),
        st.tuples(st.just("silenced"), st.sampled_from(["m5", "m6"]), st.just(None)),
    ),
    min_size=1,
    max_size=14,
)


def check_invariants(result: TurnResult) -> None:
    session = result.session
    assert assert_session(session, session["id"]) == session
    encode_session(session, session["version"] + 1)
    assert len(session["inputs"]) <= 50
    assert sum(run["status"] == "asking" for run in session["runs"]) <= 1
    for run in session["runs"]:
        assert len(run["outcomes"]) <= 50
        assert run["hop"] <= 5
    always = Counter(
        key.rsplit(":", 1)[0]
        for key in session["claims"]
        if key.count(":") >= 2 and not key.endswith(":") and key.split(":")[0] in FLOW_IDS
    )
    assert all(count <= 50 for count in always.values())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=agents(), ops=operations)
def test_random_flows_and_inputs_keep_every_invariant(agent: Agent, ops: list[Any]) -> None:
    clock = FakeClock("2026-09-20T10:00:00.000Z")
    scheduler = MemoryScheduler()
    model = DeterministicModel()
    session: dict[str, Any] | None = None
    anchors = {"lead": {"key": "L1"}}
    for kind, a, b in ops:
        if kind == "advance":
            clock.advance(a)
            continue
        turn_input: dict[str, Any] = {}
        fired_wake = False
        if kind in ("message", "silenced"):
            turn_input["message"] = {"text": b or "oi", **({"id": a} if a else {})}
            if kind == "silenced":
                turn_input["silenced"] = "human"
        elif kind == "wake":
            due = scheduler.due("2100-01-01T00:00:00.000Z", pop=False)
            if not due:
                continue
            entry = due[0]
            scheduler.due(entry["at"])
            clock.set(max(clock.now_ms, ms_from_iso(entry["at"])))
            turn_input["wake"] = entry["key"]
            fired_wake = True
        elif kind == "stale":
            turn_input["wake"] = a
        elif kind == "event":
            turn_input["event"] = {"name": a, "key": b, "payload": {"v": 1}}
        else:
            turn_input["start"] = {"flow": a, "key": b}
        frozen = copy.deepcopy(session)

        replay = functools.partial(
            turn,
            agent=agent,
            session_id="s1",
            session=session,
            clock=clock,
            model=model,
            anchors=anchors,
            **turn_input,
        )
        result = replay()
        assert result == replay()
        assert session == frozen
        check_invariants(result)
        for code in {line.get("code") for line in result.outcomes} | {
            s["code"] for s in result.skipped
        }:
            event(f"outcome code {code}")
        if fired_wake:
            assert result.changed or result.code in ("stale-wake", "silence-broken"), (
                result.outcomes
            )
        if result.changed:
            scheduler.add(result.schedule)
            session = {**result.session, "version": result.session["version"] + 1}
