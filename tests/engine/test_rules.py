"""Engine rules the scenarios do not pin down: coercion, templates, input errors, the retry
ladder, event trigger delays, mentions, branches, fixed questions, business hours, pending wakes."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from warlock_sessions.engine import (
    OUTCOME_MESSAGES,
    Agent,
    Deferral,
    FakeClock,
    FakeModel,
    FakeModelExhausted,
    MemoryScheduler,
    ProviderError,
    Spoken,
    Understanding,
    new_session,
    pending_wakes,
    turn,
)
from warlock_sessions.engine.fields import coerce_field
from warlock_sessions.engine.templates import render
from warlock_sessions.errors import InvalidInputError

T0_MS = 1789898400000
SPEC_CODES = [
    "no-session",
    "duplicate-input",
    "stale-wake",
    "silence-broken",
    "already-claimed",
    "cooldown",
    "hop-limit",
    "already-running",
    "flow-gone",
    "step-loop",
    "step-gone",
    "customer-replied",
    "premise-changed",
    "silenced",
    "already-known",
    "asked-fixed",
    "another-reply",
    "branch",
    "max-asks",
    "already-sent",
    "inline-delay",
    "awaiting-trigger",
    "awaiting-event",
    "event-arrived",
    "no-event",
    "replied",
    "no-reply",
    "action-skipped",
    "action-failed",
    "action-deferred",
    "unknown-field",
    "bad-value",
    "not-in-enum",
    "provider-unavailable",
    "provider-quota",
    "provider-auth",
    "provider-context",
    "provider-invalid",
]


#: Codes of our own dialogue rules (docs/engine.md, "Dialogue rules"), beyond the spec's.
DIALOGUE_CODES = [
    "agent-interrupted",
    "amended",
    "interrupted",
    "no-match",
    "out-of-range",
    "required-missing",
    "unresolved-placeholder",
]
#: Codes of handing a session to people (docs/handover.md).
HANDOVER_CODES = [
    "handed-over",
    "handover-taken",
    "handed-back",
    "with-people",
    "wake-held",
    "not-handed-over",
]


def test_every_outcome_code_of_the_spec_has_one_sentence() -> None:
    assert sorted(OUTCOME_MESSAGES) == sorted(SPEC_CODES + DIALOGUE_CODES + HANDOVER_CODES)
    assert all(sentence and sentence[0].islower() for sentence in OUTCOME_MESSAGES.values())


@pytest.mark.parametrize(
    ("kind", "raw", "expected"),
    [
        ("number", "1500,50", (True, 1500.5)),
        ("number", "1.500,50", (False, "bad-value")),
        ("number", " 42 ", (True, 42)),
        ("number", "abc", (False, "bad-value")),
        ("number", "", (False, "bad-value")),
        ("number", True, (False, "bad-value")),
        ("number", "nan", (False, "bad-value")),
        ("number", 2.5, (True, 2.5)),
        ("integer", "7,9", (True, 7)),
        ("integer", -3.7, (True, -3)),
        ("integer", "1_000", (False, "bad-value")),
        ("boolean", "Sim", (True, True)),
        ("boolean", "não", (True, False)),
        ("boolean", "nao", (True, False)),
        ("boolean", "0", (True, False)),
        ("boolean", "talvez", (False, "bad-value")),
        ("boolean", 1, (False, "bad-value")),
        ("string", 12, (True, "12")),
        ("string", 1.0, (True, "1")),
        ("string", False, (True, "false")),
        ("string", {"a": 1}, (False, "bad-value")),
    ],
)
def test_field_coercion(kind: str, raw: Any, expected: tuple[bool, Any]) -> None:
    assert coerce_field({"type": kind}, raw) == expected


def test_enums_compare_typed_values() -> None:
    assert coerce_field({"type": "integer", "enum": [1, 2]}, "2") == (True, 2)
    assert coerce_field({"type": "string", "enum": ["1"]}, 1) == (True, "1")
    assert coerce_field({"type": "boolean", "enum": [True]}, "no") == (False, "not-in-enum")


@pytest.mark.parametrize(
    ("template", "scope", "expected"),
    [
        ("Oi {{data.nome}}!", {"data": {"nome": "Ana"}}, "Oi Ana!"),
        ("Oi {{ data.nome }}", {"data": {}}, "Oi"),
        ("Ola {{context.lead.name}}, tudo bem?", {"context": {"lead": None}}, "Ola, tudo bem?"),
        ("Ola {{data.x}} , ok", {"data": {"x": ""}}, "Ola, ok"),
        (
            "{{input.itens}} e {{data.n}}",
            {"input": {"itens": ["a", "b"]}, "data": {"n": 2.0}},
            "a, b e 2",
        ),
        ("{{data.obj}}", {"data": {"obj": {"k": True}}}, '{"k":true}'),
    ],
)
def test_templates(template: str, scope: dict[str, Any], expected: str) -> None:
    assert render(template, scope) == expected


AGENT = Agent(
    [{"id": "bv", "on": [{"message": []}], "steps": [{"id": "q", "collect": ["nome"]}]}],
    fields={"nome": {"type": "string"}},
)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of"),
        ({"message": "oi", "wake": "k"}, "exactly one of"),
        ({"message": {"id": "m1"}}, "message.text: must be text"),
        ({"message": {"text": "oi", "id": 5}}, "message.id: must be text"),
        ({"wake": 5}, "wake: must be a wake key"),
        ({"event": {"name": "pago"}}, "event.key: must be"),
        ({"start": {"flow": "bv", "key": "k", "hop": "1"}}, "start.hop: must be a whole number"),
        # What no store can keep is refused before the turn, never after a save.
        ({"event": {"name": "e", "key": "k", "payload": {"n": float("inf")}}}, "payload.n: is inf"),
        ({"start": {"flow": "bv", "key": "k", "input": _nested(40)}}, "deeper than 32"),
        ({"message": {"text": "a\x00b"}}, "message.text: contains a NUL"),
        ({"message": {"text": "oi", "id": "\ud800"}}, "message.id: contains a lone surrogate"),
        ({"wake": "w\udfff"}, "wake: contains a lone surrogate"),
        ({"event": {"name": "e", "key": "k", "payload": {"\ud800": 1}}}, "lone surrogate"),
        ({"message": {"text": "oi", "at": "yesterday"}}, "message.at: must be an ISO-8601"),
        ({"message": {"text": "oi", "at": "2026-13-01T00:00:00Z"}}, "message.at"),
        ({"message": {"text": "oi", "at": "2026-01-01T00:00:00+99:00"}}, "message.at"),
        ({"message": {"text": "oi", "at": "9999-12-31T23:59:59-23:59"}}, "message.at"),
    ],
)
def test_bad_turn_input_gets_a_specific_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        turn(agent=AGENT, session_id="s1", clock=FakeClock(), model=FakeModel(), **kwargs)


def test_a_turn_needing_a_model_without_one_says_so() -> None:
    with pytest.raises(ValueError, match="needs a model"):
        turn(agent=AGENT, session_id="s1", message="oi", clock=FakeClock())


def test_an_exhausted_fake_model_fails_the_test_loudly() -> None:
    with pytest.raises(FakeModelExhausted, match="speak"):
        turn(agent=AGENT, session_id="s1", message="oi", clock=FakeClock(), model=FakeModel())


def retry_turns(replies: list[Any], *, should_retry: Any = None) -> list[Any]:
    agent = Agent(
        [{"id": "bv", "on": [{"message": []}], "steps": [{"id": "q", "collect": ["nome"]}]}],
        fields={"nome": {"type": "string"}},
        should_retry=should_retry,
    )
    clock = FakeClock(T0_MS)
    first = turn(
        agent=agent,
        session_id="s1",
        message={"text": "oi", "id": "m1"},
        clock=clock,
        model=FakeModel(speak=[replies[0]]),
    )
    results = [first]
    session = first.session
    for reply in replies[1:]:
        wake = results[-1].schedule[0]["key"]
        clock.set(results[-1].schedule[0]["at"])
        result = turn(
            agent=agent,
            session_id="s1",
            session=session,
            wake=wake,
            clock=clock,
            model=FakeModel(speak=[reply]),
        )
        results.append(result)
        session = result.session
    return results


def test_the_retry_ladder_climbs_five_rungs_then_fails_the_run() -> None:
    down = Deferral(code="provider-unavailable", retryable=True)
    results = retry_turns([down] * 6)
    gaps = [int(r.schedule[0]["key"].rsplit(":", 1)[1]) - T0_MS for r in results[:5]]
    assert [r.schedule[0]["key"].split(":retry:")[0] for r in results[:5]] == ["bv#m1:q:1"] * 5
    elapsed = [gaps[0]] + [b - a for a, b in itertools.pairwise(gaps)]
    assert elapsed == [60_000, 300_000, 900_000, 3_600_000, 21_600_000]
    last = results[5]
    assert [(line["status"], line["code"]) for line in last.outcomes][-1] == (
        "failed",
        "provider-unavailable",
    )
    assert [run["reason"] for run in last.ended] == ["failed"]


def test_a_stated_reset_time_beats_the_ladder_and_a_raised_provider_error_is_a_deferral() -> None:
    later = T0_MS + 2 * 3_600_000
    [result] = retry_turns([Deferral(code="provider-quota", retryable=True, reset_at_ms=later)])
    assert result.schedule[0] == {
        "key": f"bv#m1:q:1:retry:{later}",
        "at": "2026-09-20T12:00:00.000Z",
    }

    agent = AGENT

    class Failing:
        def understand(self, request: Any) -> Understanding:
            raise AssertionError("not called")

        def speak(self, request: Any) -> Spoken:
            raise ProviderError("provider-auth", retryable=False, detail="bad key")

    failed = turn(
        agent=agent,
        session_id="s1",
        message={"text": "oi", "id": "m1"},
        clock=FakeClock(T0_MS),
        model=Failing(),
    )
    assert [(line["status"], line.get("code")) for line in failed.outcomes][-1] == (
        "failed",
        "provider-auth",
    )
    assert failed.session["runs"] == [] and failed.schedule == []


def test_should_retry_overrides_the_verdict() -> None:
    [result] = retry_turns(
        [Deferral(code="provider-invalid", retryable=False)], should_retry=lambda d: True
    )
    assert result.schedule[0]["key"].startswith("bv#m1:q:1:retry:")


def test_an_event_trigger_after_parks_the_start_and_business_hours_snap_it() -> None:
    def next_morning(at: datetime, context: Any) -> datetime:
        return (
            (at + timedelta(days=1)).replace(hour=9, minute=0, second=0, microsecond=0)
            if at.hour >= 18
            else at
        )

    agent = Agent(
        [
            {
                "id": "nps",
                "on": [{"event": "entregue", "after": "9h", "businessHours": True}],
                "steps": [{"id": "s", "say": "Como foi?"}],
            }
        ],
        business_hours=next_morning,
    )
    parked = turn(
        agent=agent,
        session_id="s1",
        event={"name": "entregue", "key": "e1"},
        clock=FakeClock(T0_MS),
        model=FakeModel(),
    )
    at = int(datetime(2026, 9, 21, 9, tzinfo=UTC).timestamp() * 1000)
    assert parked.schedule == [{"key": f"nps#e1:start:{at}", "at": "2026-09-21T09:00:00.000Z"}]
    assert [line["code"] for line in parked.outcomes] == ["awaiting-trigger"]
    fired = turn(
        agent=agent,
        session_id="s1",
        session=parked.session,
        wake=f"nps#e1:start:{at}",
        clock=FakeClock(at),
        model=FakeModel(),
    )
    assert [m["key"] for m in fired.messages] == ["nps#e1:s:1"]


def test_a_mention_starts_with_its_extract_as_input() -> None:
    agent = Agent(
        [
            {
                "id": "cupom",
                "on": [{"mention": ["cupom"], "extract": {"codigo": {"type": "string"}}}],
                "steps": [{"id": "s", "say": "Cupom {{input.codigo}} aplicado"}],
            }
        ],
        idle="silent",
    )
    result = turn(
        agent=agent,
        session_id="s1",
        message={"text": "tenho o cupom X9", "id": "m1"},
        clock=FakeClock(T0_MS),
        model=FakeModel(
            understand=[
                Understanding(mentions={"cupom": True}, extract={"cupom": {"codigo": "X9"}})
            ]
        ),
    )
    assert [m["text"] for m in result.messages] == ["Cupom X9 aplicado"]
    assert result.session["runs"] == [] and result.ended[0]["input"] == {"codigo": "X9"}


def test_a_when_branch_judged_true_moves_the_asker() -> None:
    agent = Agent(
        [
            {
                "id": "venda",
                "on": [{"message": []}],
                "steps": [
                    {
                        "id": "q",
                        "collect": ["nome"],
                        "branches": [{"when": "quer desistir", "then": "tchau"}],
                    },
                    {"id": "tchau", "say": "Até logo"},
                ],
            }
        ],
        fields={"nome": {"type": "string"}},
    )
    clock = FakeClock(T0_MS)
    first = turn(
        agent=agent,
        session_id="s1",
        message={"text": "oi", "id": "m1"},
        clock=clock,
        model=FakeModel(speak=[Spoken("Nome?")]),
    )
    model = FakeModel(understand=[Understanding(branches={"venda#m1/q/0": True})])
    second = turn(
        agent=agent,
        session_id="s1",
        session=first.session,
        message={"text": "desisto", "id": "m2"},
        clock=clock,
        model=model,
    )
    assert [b.key for b in model.requests["understand"][0].branches] == ["venda#m1/q/0"]
    assert ("collect", "ok", "branch") in [
        (x["kind"], x["status"], x.get("code")) for x in second.outcomes
    ]
    assert [m["text"] for m in second.messages] == ["Até logo"]


def test_a_fixed_question_is_sent_verbatim_once_without_a_model_call() -> None:
    agent = Agent(
        [
            {
                "id": "c",
                "on": [{"message": []}],
                "steps": [{"id": "q", "collect": ["nome"], "question": "Qual é o seu nome?"}],
            }
        ],
        fields={"nome": {"type": "string"}},
    )
    result = turn(
        agent=agent,
        session_id="s1",
        message={"text": "oi", "id": "m1"},
        clock=FakeClock(T0_MS),
        model=FakeModel(),
    )
    assert [(m["kind"], m["text"], m["key"]) for m in result.messages] == [
        ("verbatim", "Qual é o seu nome?", "c#m1:q:1")
    ]
    assert result.llm_calls == 0 and result.session["runs"][0]["asked"] == {"nome": 1}
    assert [line["code"] for line in result.outcomes] == ["asked-fixed"]


def test_pending_wakes_recomputes_the_schedule_read_only() -> None:
    agent = Agent(
        [
            {"id": "t", "steps": [{"id": "w", "wait": "1d"}]},
            {"id": "r", "on": [{"silence": "2h"}], "steps": [{"id": "s", "say": "oi?"}]},
        ]
    )
    clock = FakeClock(T0_MS)
    result = turn(
        agent=agent,
        session_id="s1",
        start={"flow": "t", "key": "k"},
        clock=clock,
        model=FakeModel(),
    )
    session = {**result.session, "lastAssistantAt": "2026-09-20T10:00:00.000Z"}
    wakes = pending_wakes(agent, session, clock=clock)
    assert wakes == [
        {"key": f"t#k:w:{T0_MS + 86_400_000}", "at": "2026-09-21T10:00:00.000Z"},
        {"key": f"silence:r:s1:{T0_MS}", "at": "2026-09-20T12:00:00.000Z"},
    ]


def test_the_memory_scheduler_replaces_and_orders() -> None:
    scheduler = MemoryScheduler()
    scheduler.add(
        [
            {"key": "a", "at": "2026-09-20T12:00:00.000Z"},
            {"key": "b", "at": "2026-09-20T11:00:00.000Z"},
        ]
    )
    scheduler.add({"key": "c", "at": "2026-09-20T10:30:00.000Z", "replaces": "a"})  # one entry
    assert scheduler.size == 2
    assert [e["key"] for e in scheduler.due("2026-09-20T11:00:00.000Z")] == ["c", "b"]
    assert scheduler.size == 0


def test_a_session_with_a_broken_blob_is_refused_before_anything_runs() -> None:
    from warlock_sessions.errors import InvalidSessionError

    with pytest.raises(InvalidSessionError, match="v is 3"):
        turn(
            agent=AGENT,
            session_id="s1",
            session={**new_session("s1"), "v": 3},
            message="oi",
            clock=FakeClock(),
            model=FakeModel(),
        )
