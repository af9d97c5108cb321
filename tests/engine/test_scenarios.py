"""Engine-spec §8: the 24 conformance scenarios, with the exact keys, codes and epoch values.

T0 = 2026-09-20T10:00:00.000Z (1789898400000); session s1; every turn saved through a
MemoryStore; U() and S() are scripted understand and speak replies.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.flows import RACE_FIELDS, RACE_FLOWS
from warlock_sessions.engine import (
    Agent,
    FakeClock,
    FakeModel,
    Spoken,
    TurnResult,
    Understanding,
    assert_session,
    migrate_session,
    new_session,
    turn,
)
from warlock_sessions.errors import InvalidSessionError, SessionConflictError
from warlock_sessions.stores import MemoryStore

T0 = "2026-09-20T10:00:00.000Z"
T0_MS = 1789898400000
HOUR = 3_600_000
DAY = 24 * HOUR


def U(**judged: Any) -> Understanding:
    return Understanding(**judged)


def S(message: str = "ok", **fields: Any) -> Spoken:
    return Spoken(message=message, fields=fields)


class Host:
    """A minimal host loop for the scenarios: load, turn, save if changed."""

    def __init__(self, agent: Agent, session_id: str = "s1") -> None:
        self.agent = agent
        self.session_id = session_id
        self.store = MemoryStore()
        self.clock = FakeClock(T0)

    def at(self, offset_ms: int) -> Host:
        self.clock.set(T0_MS + offset_ms)
        return self

    def turn(
        self,
        *,
        understand: tuple[Any, ...] = (),
        speak: tuple[Any, ...] = (),
        session: Any = "load",
        **turn_input: Any,
    ) -> TurnResult:
        model = FakeModel(understand=understand, speak=speak)
        loaded = self.store.load(self.session_id) if session == "load" else session
        result = turn(
            agent=self.agent,
            session_id=self.session_id,
            session=loaded,
            clock=self.clock,
            model=model,
            **turn_input,
        )
        assert model.remaining == {"understand": 0, "speak": 0}, "the script was not used up"
        if result.changed:
            self.store.save(result.session, loaded["version"] if loaded else 0)
        return result

    def load(self) -> dict[str, Any]:
        session = self.store.load(self.session_id)
        assert session is not None
        return session


def run_of(session: dict[str, Any], flow_id: str) -> dict[str, Any]:
    return next(run for run in session["runs"] if run["flowId"] == flow_id)


def codes(result: TurnResult) -> list[str]:
    return [line["code"] for line in result.outcomes if "code" in line]


def lines(result: TurnResult) -> list[tuple[str, str, str | None]]:
    return [(line["kind"], line["status"], line.get("code")) for line in result.outcomes]


NOME = {"nome": {"type": "string"}}


def catch_all_agent() -> Agent:
    return Agent(
        [{"id": "bv", "on": [{"message": []}], "steps": [{"id": "nome", "collect": ["nome"]}]}],
        fields=NOME,
    )


# 1 ---------------------------------------------------------------------------------------
def test_01_catch_all() -> None:
    host = Host(catch_all_agent())
    result = host.turn(message={"text": "oi", "id": "m1"}, session=None, speak=(S(nome=None),))

    assert result.llm_calls == 1
    assert result.started == [
        {"runId": "bv#m1", "flowId": "bv", "anchor": "s1", "dedupeKey": "bv:s1:"}
    ]
    assert [(m["kind"], m["key"]) for m in result.messages] == [("ai", "bv#m1:nome:1")]
    [run] = result.session["runs"]
    assert (run["status"], run["asked"], run["visits"]) == ("asking", {"nome": 1}, {"nome": 1})
    assert result.session["inputs"] == ["m1"]
    assert result.session["claims"] == {"bv:s1:": {"at": T0}}
    assert result.session["lastUserAt"] == result.session["lastAssistantAt"] == T0
    assert result.session["version"] == 0


# 2 ---------------------------------------------------------------------------------------
def test_02_replay_is_deterministic_and_a_repeated_message_is_ignored() -> None:
    agent = catch_all_agent()

    def first() -> TurnResult:
        return turn(
            agent=agent,
            session_id="s1",
            message={"text": "oi", "id": "m1"},
            clock=FakeClock(T0),
            model=FakeModel(speak=[S(nome=None)]),
        )

    assert first() == first()

    host = Host(agent)
    host.turn(message={"text": "oi", "id": "m1"}, session=None, speak=(S(nome=None),))
    assert host.load()["version"] == 1
    replay = host.turn(message={"text": "oi", "id": "m1"})
    assert replay.changed is False
    assert [(line["code"], line["key"]) for line in replay.outcomes] == [("duplicate-input", "m1")]
    assert lines(replay) == [("wait", "skipped", "duplicate-input")]
    assert replay.llm_calls == 0 and replay.code == "duplicate-input"


# 3 ---------------------------------------------------------------------------------------
def race_agent() -> Agent:
    return Agent(RACE_FLOWS, fields=RACE_FIELDS)


def test_03_race_two_hosts_one_conflict_replayed_with_identical_keys() -> None:
    agent = race_agent()
    host = Host(agent)
    first = host.turn(
        message={"text": "oi", "id": "m1"},
        session=None,
        understand=(U(flows={"triagem": 90}, fields={"nome": "Ana"}),),
        speak=(S(),),
    )
    assert first.schedule == [
        {"key": "silence:retomar:s1:1789898400000", "at": "2026-09-21T10:00:00.000Z"}
    ]
    v1 = host.load()
    assert v1["version"] == 1

    clock = FakeClock(T0_MS + DAY)
    host_a = turn(
        agent=agent,
        session_id="s1",
        session=v1,
        wake="silence:retomar:s1:1789898400000",
        clock=clock,
        model=FakeModel(speak=[S()]),
    )
    assert host_a.started[0]["runId"] == "retomar#1789898400000"
    assert [m["key"] for m in host_a.messages] == ["retomar#1789898400000:p1:1"]
    assert host_a.schedule == [
        {"key": "retomar#1789898400000:w1:1790157600000", "at": "2026-09-23T10:00:00.000Z"}
    ]
    assert run_of(host_a.session, "triagem")["status"] == "asking"
    host.store.save(host_a.session, 1)

    def host_b(session: dict[str, Any]) -> TurnResult:
        return turn(
            agent=agent,
            session_id="s1",
            session=session,
            message={"text": "sou da ACME", "id": "m2"},
            clock=clock,
            model=FakeModel(understand=[U()], speak=[S()]),
        )

    lost = host_b(v1)
    with pytest.raises(SessionConflictError) as conflict:
        host.store.save(lost.session, 1)
    assert (conflict.value.expected_version, conflict.value.actual_version) == (1, 2)

    v2 = host.load()
    replayed = host_b(v2)
    assert "replied" in codes(replayed)
    assert [(run["flowId"], run["reason"]) for run in replayed.ended] == [("retomar", "end")]
    # Its second ask at the same visit: a key of its own, so the outbox keeps both messages.
    assert [m["key"] for m in replayed.messages] == ["triagem#m1:quem:1.1"]
    assert host.store.save(replayed.session, 2)["version"] == 3
    assert host_b(v1) == lost  # recomputing the lost turn mints identical keys


# 4 ---------------------------------------------------------------------------------------
def test_04_stale_wake_and_wake_without_session() -> None:
    agent = race_agent()
    stale = turn(
        agent=agent,
        session_id="s1",
        session=new_session("s1"),
        wake="retomar#1789898400000:w1:1790157600000",
        clock=FakeClock(T0),
        model=FakeModel(),
    )
    assert (stale.changed, lines(stale)) == (False, [("wait", "skipped", "stale-wake")])
    nobody = turn(
        agent=agent, session_id="s1", wake="anything", clock=FakeClock(T0), model=FakeModel()
    )
    assert (nobody.changed, nobody.code) == (False, "no-session")


# 5 ---------------------------------------------------------------------------------------
def test_05_timer() -> None:
    host = Host(
        Agent(
            [
                {
                    "id": "lembrete",
                    "steps": [
                        {"id": "espera", "wait": "1d"},
                        {"id": "aviso", "prompt": "Lembrete!"},
                    ],
                }
            ]
        )
    )
    started = host.turn(start={"flow": "lembrete", "key": "k1"}, session=None)
    assert started.llm_calls == 0
    assert started.schedule == [
        {"key": "lembrete#k1:espera:1789984800000", "at": "2026-09-21T10:00:00.000Z"}
    ]
    assert run_of(started.session, "lembrete")["waiting"]["until"] == "2026-09-21T10:00:00.000Z"

    woken = host.at(DAY).turn(wake="lembrete#k1:espera:1789984800000", speak=(S(),))
    assert "no-reply" in codes(woken)
    assert [m["key"] for m in woken.messages] == ["lembrete#k1:aviso:1"]


# 6 ---------------------------------------------------------------------------------------
def test_06_reply_on_an_anchor_seen_when_the_wake_fires() -> None:
    host = Host(
        Agent(
            [
                {
                    "id": "seguir",
                    "anchor": "lead",
                    "steps": [
                        {"id": "w", "wait": "1d", "else": "respondeu"},
                        {"id": "silencio", "say": "Sumiu?"},
                        {"id": "respondeu", "say": "Obrigado!"},
                    ],
                }
            ]
        )
    )
    host.turn(start={"flow": "seguir", "key": "k1"}, anchors={"lead": {"key": "L1"}}, session=None)
    woken = host.at(DAY).turn(
        wake="seguir#k1:w:1789984800000",
        anchors={"lead": {"key": "L1", "lastInboundAt": "2026-09-20T12:00:00.000Z"}},
    )
    assert "replied" in codes(woken)
    assert [m["key"] for m in woken.messages] == ["seguir#k1:respondeu:1"]


# 7 ---------------------------------------------------------------------------------------
def payment_agent(with_else: bool = True) -> Agent:
    wait: dict[str, Any] = {"id": "espera", "wait": {"event": "pago", "upTo": "7d"}}
    if with_else:
        wait["else"] = "cobra"
    return Agent(
        [
            {
                "id": "pagamento",
                "steps": [
                    wait,
                    {"id": "obrigado", "say": "Pago!", "then": "end"},
                    {"id": "cobra", "say": "Falta pagar"},
                ],
            }
        ]
    )


def test_07_event_wait_arrives_or_times_out() -> None:
    host = Host(payment_agent())
    parked = host.turn(start={"flow": "pagamento", "key": "p1"}, session=None)
    assert codes(parked) == ["awaiting-event"]
    arrived = host.at(HOUR).turn(event={"name": "pago", "key": "e1"})
    assert "event-arrived" in codes(arrived)
    assert [m["key"] for m in arrived.messages] == ["pagamento#p1:obrigado:1"]

    host = Host(payment_agent())
    host.turn(start={"flow": "pagamento", "key": "p1"}, session=None)
    timed_out = host.at(7 * DAY).turn(wake="pagamento#p1:espera:1790503200000")
    assert "no-event" in codes(timed_out)
    assert [m["key"] for m in timed_out.messages] == ["pagamento#p1:cobra:1"]

    host = Host(payment_agent(with_else=False))
    host.turn(start={"flow": "pagamento", "key": "p1"}, session=None)
    ended = host.at(7 * DAY).turn(wake="pagamento#p1:espera:1790503200000")
    assert [(run["flowId"], run["reason"]) for run in ended.ended] == [("pagamento", "end")]
    assert ended.messages == []


# 8 ---------------------------------------------------------------------------------------
def silence_agent() -> Agent:
    return Agent(
        [
            {"id": "conversa", "on": [{"message": []}], "steps": [{"id": "q", "prompt": "Oi"}]},
            {
                "id": "lembrar",
                "on": [{"silence": "1h"}],
                "steps": [{"id": "w", "wait": "1h"}, {"id": "s", "say": "Ainda aí?"}],
            },
        ],
    )


def test_08_silence_broken_and_customer_replied() -> None:
    host = Host(silence_agent())
    first = host.turn(message={"text": "oi", "id": "m1"}, session=None, speak=(S(),))
    old_key = f"silence:lembrar:s1:{T0_MS}"
    assert [w["key"] for w in first.schedule] == [old_key]

    second = host.at(10 * 60_000).turn(message={"text": "e aí", "id": "m2"}, speak=(S("idle"),))
    new_key = f"silence:lembrar:s1:{T0_MS + 600_000}"
    assert second.schedule == [
        {"key": new_key, "at": "2026-09-20T11:10:00.000Z", "replaces": old_key}
    ]

    broken = host.at(HOUR).turn(wake=old_key)
    assert (broken.changed, broken.code) == (False, "silence-broken")

    started = host.at(70 * 60_000).turn(wake=new_key)
    assert run_of(started.session, "lembrar")["status"] == "waiting"
    host.at(80 * 60_000).turn(message={"text": "voltei", "id": "m3"}, speak=(S("idle"),))
    replied = host.at(130 * 60_000).turn(wake=f"lembrar#{T0_MS + 600_000}:w:{T0_MS + 130 * 60_000}")
    assert [(line["kind"], line["status"], line["code"]) for line in replied.outcomes][-1] == (
        "say",
        "skipped",
        "customer-replied",
    )
    assert replied.messages == []


# 9 ---------------------------------------------------------------------------------------
def test_09_the_floor_is_lifo() -> None:
    agent = Agent(
        [
            {
                "id": "tarde",
                "steps": [{"id": "espera", "wait": "1h"}, {"id": "fala", "collect": ["horario"]}],
            },
            {"id": "funil", "steps": [{"id": "f", "collect": ["orcamento"]}]},
            {"id": "outro", "steps": [{"id": "o", "collect": ["cidade"]}]},
        ],
        fields={
            "orcamento": {"type": "number"},
            "cidade": {"type": "string"},
            "horario": {"type": "string"},
        },
        idle="silent",
    )
    host = Host(agent)
    host.turn(start={"flow": "tarde", "key": "a"}, session=None)
    host.at(10 * 60_000).turn(start={"flow": "funil", "key": "b"}, speak=(S(),))
    woken = host.at(HOUR).turn(wake="tarde#a:espera:1789902000000", speak=(S(),))
    assert run_of(woken.session, "tarde")["status"] == "asking"
    assert (
        run_of(woken.session, "funil")["status"],
        run_of(woken.session, "funil")["suspendedAt"],
    ) == ("suspended", "2026-09-20T11:00:00.000Z")

    third = host.at(70 * 60_000).turn(start={"flow": "outro", "key": "c"}, speak=(S(),))
    assert [r["status"] for r in third.session["runs"]] == ["suspended", "suspended", "asking"]

    filled = host.at(75 * 60_000).turn(
        message={"text": "Recife", "id": "m1"}, understand=(U(fields={"cidade": "Recife"}),)
    )
    assert [(r["id"], r["status"]) for r in filled.session["runs"]] == [
        ("tarde#a", "asking"),
        ("funil#b", "suspended"),
    ]
    assert "suspendedAt" not in run_of(filled.session, "tarde")


# 10 --------------------------------------------------------------------------------------
def test_10_another_reply() -> None:
    agent = Agent(
        [
            {"id": "trid", "on": [{"message": []}], "steps": [{"id": "q", "collect": ["nome"]}]},
            {
                "id": "aviso",
                "on": [{"mention": [], "if": lambda ctx: ctx.context == "promo"}],
                "steps": [{"id": "s", "say": "Promoção!"}],
            },
        ],
        fields=NOME,
    )
    host = Host(agent)
    host.turn(message={"text": "oi", "id": "m1"}, session=None, speak=(S(),))
    second = host.turn(
        message={"text": "e a promo?", "id": "m2"}, context="promo", understand=(U(),)
    )
    assert [(m["kind"], m["key"]) for m in second.messages] == [("verbatim", "aviso#m2:s:1")]
    assert ("collect", "skipped", "another-reply") in lines(second)
    assert run_of(second.session, "trid")["status"] == "asking"
    assert second.llm_calls == 1  # the understand call only; speak was never called


# 11 --------------------------------------------------------------------------------------
def test_11_routing_sticky_asker_catch_all_idle_and_unscored_start() -> None:
    fields = {"x": {"type": "string"}, "y": {"type": "string"}}
    two = Agent(
        [
            {"id": "A", "on": [{"message": ["a"]}], "steps": [{"id": "qa", "collect": ["x"]}]},
            {"id": "B", "on": [{"message": ["b"]}], "steps": [{"id": "qb", "collect": ["y"]}]},
        ],
        fields=fields,
    )
    host = Host(two)
    host.turn(
        message={"text": "a", "id": "m1"},
        session=None,
        understand=(U(flows={"A": 90}),),
        speak=(S(),),
    )
    kept = host.turn(
        message={"text": "?", "id": "m2"}, understand=(U(flows={"A": 50, "B": 60}),), speak=(S(),)
    )
    assert [r["flowId"] for r in kept.session["runs"]] == ["A"]
    switched = host.turn(
        message={"text": "b", "id": "m3"}, understand=(U(flows={"A": 50, "B": 66}),), speak=(S(),)
    )
    assert [(r["flowId"], r["status"]) for r in switched.session["runs"]] == [
        ("A", "suspended"),
        ("B", "asking"),
    ]

    agendar = {
        "id": "agendar",
        "on": [{"message": ["agendar"]}],
        "steps": [{"id": "q", "prompt": "Quando?"}],
    }
    geral = {"id": "geral", "on": [{"message": []}], "steps": [{"id": "g", "prompt": "Oi"}]}
    low = Host(Agent([agendar, geral])).turn(
        message={"text": "oi", "id": "m1"},
        session=None,
        understand=(U(flows={"agendar": 10}),),
        speak=(S(),),
    )
    assert [s["flowId"] for s in low.started] == ["geral"]

    idle = Host(Agent([agendar])).turn(
        message={"text": "oi", "id": "m1"},
        session=None,
        understand=(U(flows={"agendar": 10}),),
        speak=(S(),),
    )
    assert [m["key"] for m in idle.messages] == ["idle:m1"]

    silent = Host(Agent([agendar], idle="silent")).turn(
        message={"text": "oi", "id": "m1"}, session=None, speak=(S(),)
    )
    assert [s["flowId"] for s in silent.started] == ["agendar"]
    assert silent.llm_calls == 1  # speak only: no understand call


# 12 --------------------------------------------------------------------------------------
def test_12_step_loop() -> None:
    agent = Agent(
        [
            {
                "id": "loop",
                "steps": [
                    {"id": "a", "if": {"known": []}, "then": "b"},
                    {"id": "b", "if": {"known": []}, "then": "a"},
                ],
            }
        ]
    )
    result = Host(agent).turn(start={"flow": "loop", "key": "k"}, session=None)
    assert len(result.outcomes) == 51
    assert lines(result)[-1] == ("if", "failed", "step-loop")
    assert [(run["id"], run["reason"]) for run in result.ended] == [("loop#k", "failed")]


# 13 --------------------------------------------------------------------------------------
def test_13_max_asks_then_stay() -> None:
    ran: list[str] = []
    agent = Agent(
        [
            {
                "id": "lead",
                "on": [{"message": []}],
                "onEnd": "stay",
                "steps": [
                    {"id": "q", "collect": ["nome"], "maxAsks": 2},
                    {"id": "d", "do": "registrar"},
                ],
            }
        ],
        fields=NOME,
        actions={"registrar": lambda params, ctx: ran.append(ctx.key)},
    )
    host = Host(agent)
    t1 = host.turn(message={"text": "oi", "id": "m1"}, session=None, speak=(S(nome=None),))
    t2 = host.turn(message={"text": "?", "id": "m2"}, understand=(U(),), speak=(S(nome=None),))
    # Upstream gives both asks the key :q:1; the outbox keeps one message per key, so the
    # second ask at the same visit is suffixed with the asks made so far.
    assert [m["key"] for m in t1.messages] == ["lead#m1:q:1"]
    assert [m["key"] for m in t2.messages] == ["lead#m1:q:1.1"]
    t3 = host.turn(message={"text": "??", "id": "m3"}, understand=(U(),), speak=(S(),))
    assert codes(t3).count("max-asks") == 1
    assert ran == ["lead#m1:d:1"]
    # Unlike upstream, the answer to the last ask is read before the limit applies (so t3
    # speaks), and a field given up is told: the give-up sentence, then the model's reply.
    assert [m["key"] for m in t3.messages] == ["lead#m1:q:1:gave-up:nome", "lead#m1:q:1.2"]
    assert t3.messages[0]["text"] == "Sorry, I couldn't get your nome, so let's go on without it."


# 14 --------------------------------------------------------------------------------------
def promo_agent(repeat: Any = None) -> Agent:
    trigger: dict[str, Any] = {"mention": []}
    if repeat is not None:
        trigger["repeat"] = repeat
    return Agent(
        [
            {"id": "promo", "on": [trigger], "steps": [{"id": "d", "do": "ok"}]},
            {"id": "ev", "on": [{"event": "ping"}], "steps": [{"id": "d", "do": "ok"}]},
        ],
        actions={"ok": lambda params, ctx: None},
        idle="silent",
    )


def test_14_claims_once_always_pruning_and_cooldown() -> None:
    host = Host(promo_agent())
    first = host.turn(message={"text": "a", "id": "m1"}, session=None)
    assert first.started[0]["dedupeKey"] == "promo:s1:"
    second = host.turn(message={"text": "b", "id": "m2"})
    assert [s["code"] for s in second.skipped] == ["already-claimed"]

    host = Host(promo_agent("always"))
    host.turn(message={"text": "a", "id": "m1"}, session=None)
    host.turn(message={"text": "b", "id": "m2"})
    assert {"promo:s1:m1", "promo:s1:m2"} <= set(host.load()["claims"])
    host.turn(event={"name": "ping", "key": "e1"})
    replayed = host.turn(event={"name": "ping", "key": "e1"})
    assert [s["code"] for s in replayed.skipped] == ["already-claimed"]

    host = Host(promo_agent())
    host.turn(event={"name": "ping", "key": "e0"}, session=None)
    for index in range(1, 55):
        host.turn(event={"name": "ping", "key": f"e{index}"})
    event_claims = sorted(
        (k for k in host.load()["claims"] if k.startswith("ev:")),
        key=lambda k: int(k.rsplit("e", 1)[1]),
    )
    assert event_claims == [f"ev:s1:e{index}" for index in range(5, 55)]

    host = Host(promo_agent({"cooldown": "1h"}))
    host.turn(message={"text": "a", "id": "m1"}, session=None)
    cooling = host.at(10 * 60_000).turn(message={"text": "b", "id": "m2"})
    assert [s["code"] for s in cooling.skipped] == ["cooldown"]
    again = host.at(HOUR).turn(message={"text": "c", "id": "m3"})
    assert [s["runId"] for s in again.started] == ["promo#m3"]
    assert host.load()["claims"]["promo:s1:"] == {"at": "2026-09-20T11:00:00.000Z"}


# 15 --------------------------------------------------------------------------------------
def test_15_deferred_do_reruns_with_the_same_key() -> None:
    keys: list[str] = []

    def enviar(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        keys.append(ctx.key)
        return {"defer": "24h", "detail": "fora do horário"} if len(keys) == 1 else {"ok": True}

    host = Host(
        Agent(
            [{"id": "campanha", "steps": [{"id": "envio", "do": "enviar"}]}],
            actions={"enviar": enviar},
        )
    )
    parked = host.turn(start={"flow": "campanha", "key": "camp:1"}, session=None)
    assert [w["key"] for w in parked.schedule] == ["campanha#camp:1:envio:1789984800000"]
    host.at(DAY).turn(wake="campanha#camp:1:envio:1789984800000")
    assert keys == ["campanha#camp:1:envio:1"] * 2
    stale = host.turn(wake="campanha#camp:1:envio:1789984800000")
    assert stale.code == "stale-wake"


# 16 --------------------------------------------------------------------------------------
def test_16_say_once() -> None:
    host = Host(
        Agent([{"id": "boas-vindas", "steps": [{"id": "oi", "say": "Bem-vindo!", "once": True}]}])
    )
    first = host.turn(start={"flow": "boas-vindas", "key": "k1"}, session=None)
    assert [m["key"] for m in first.messages] == ["boas-vindas#k1:oi:1"]
    second = host.turn(start={"flow": "boas-vindas", "key": "k2"})
    assert second.messages == [] and "already-sent" in codes(second)
    assert "boas-vindas:oi:s1" in host.load()["claims"]


# 17 --------------------------------------------------------------------------------------
def test_17_inline_delay() -> None:
    agent = Agent(
        [
            {
                "id": "trid",
                "on": [{"message": []}],
                "steps": [
                    {"id": "a", "say": "a"},
                    {"id": "w", "wait": "3s"},
                    {"id": "b", "say": "b"},
                    {"id": "q", "prompt": "?"},
                ],
            },
            {"id": "lento", "steps": [{"id": "w", "wait": "5s"}, {"id": "d", "do": "ok"}]},
        ],
        actions={"ok": lambda params, ctx: None},
    )
    result = Host(agent).turn(message={"text": "oi", "id": "m1"}, session=None, speak=(S("q"),))
    assert [(m["text"], m["afterMs"], m["key"]) for m in result.messages] == [
        ("a", 0, "trid#m1:a:1"),
        ("b", 3000, "trid#m1:b:1"),
        ("q", 0, "trid#m1:q:1"),
    ]
    assert result.schedule == []
    parked = Host(agent).turn(start={"flow": "lento", "key": "k"}, session=None)
    assert parked.schedule == [{"key": "lento#k:w:1789898405000", "at": "2026-09-20T10:00:05.000Z"}]


# 18 --------------------------------------------------------------------------------------
def test_18_stay() -> None:
    host = Host(
        Agent(
            [
                {
                    "id": "faq",
                    "on": [{"message": []}],
                    "onEnd": "stay",
                    "steps": [{"id": "r", "prompt": "Pergunte"}],
                }
            ]
        )
    )
    t1 = host.turn(message={"text": "oi", "id": "m1"}, session=None, speak=(S(),))
    assert [m["key"] for m in t1.messages] == ["faq#m1:r:1"]
    run = run_of(t1.session, "faq")
    assert (run["staying"], run["visits"], run["status"]) == (True, {"r": 2}, "asking")
    t2 = host.turn(message={"text": "e?", "id": "m2"}, speak=(S(),))
    assert [m["key"] for m in t2.messages] == ["faq#m1:r:2"]

    no_talk = Host(
        Agent([{"id": "faq", "onEnd": "stay", "steps": [{"id": "s", "say": "só isso"}]}])
    )
    ended = no_talk.turn(start={"flow": "faq", "key": "k"}, session=None)
    assert [(r["flowId"], r["reason"]) for r in ended.ended] == [("faq", "end")]


# 19 --------------------------------------------------------------------------------------
def test_19_step_with_clear() -> None:
    agent = Agent(
        [
            {
                "id": "gate",
                "steps": [
                    {"id": "c1", "collect": ["confirmado"]},
                    {
                        "id": "ok",
                        "if": {"equals": {"confirmado": True}},
                        "then": "end",
                        "else": {"step": "c1", "clear": ["confirmado"]},
                    },
                ],
            }
        ],
        fields={"confirmado": {"type": "boolean"}},
    )
    session = {**new_session("s1"), "data": {"confirmado": False}}
    result = Host(agent).turn(
        start={"flow": "gate", "key": "k"}, session=session, speak=(S(confirmado=None),)
    )
    assert lines(result)[:2] == [("collect", "skipped", "already-known"), ("if", "ok", None)]
    assert result.outcomes[1]["next"] == "c1"
    run = run_of(result.session, "gate")
    assert result.session["data"] == {}
    assert (run["visits"], run["status"]) == ({"c1": 2, "ok": 1}, "asking")


# 20 --------------------------------------------------------------------------------------
def test_20_premise_changed() -> None:
    agent = Agent(
        [
            {
                "id": "vip",
                "on": [{"message": [], "if": {"equals": {"vip": True}}}],
                "steps": [{"id": "q", "collect": ["nome"]}],
            }
        ],
        fields={"nome": {"type": "string"}, "vip": {"type": "boolean"}},
    )
    host = Host(agent)
    host.turn(
        message={"text": "oi", "id": "m1"},
        session={**new_session("s1"), "data": {"vip": True}},
        speak=(S(),),
    )
    changed = host.turn(
        message={"text": "não sou vip", "id": "m2"},
        understand=(U(fields={"vip": "não"}),),
        speak=(S("idle"),),
    )
    assert ("collect", "skipped", "premise-changed") in lines(changed)
    assert [m["key"] for m in changed.messages] == ["idle:m2"]

    ran: list[str] = []
    guarded = Agent(
        [{"id": "g", "while": {"equals": {"ok": True}}, "steps": [{"id": "d", "do": "act"}]}],
        fields={"ok": {"type": "boolean"}},
        actions={"act": lambda params, ctx: ran.append(ctx.key)},
    )
    result = Host(guarded).turn(start={"flow": "g", "key": "k"}, session=None)
    assert ran == [] and "premise-changed" in codes(result)


# 21 --------------------------------------------------------------------------------------
def test_21_silenced() -> None:
    host = Host(catch_all_agent())
    host.turn(message={"text": "oi", "id": "m1"}, session=None, speak=(S(),))
    quiet = host.turn(message={"text": "?", "id": "m2"}, silenced="human")
    assert (quiet.llm_calls, run_of(quiet.session, "bv")["status"], quiet.messages) == (
        0,
        "asking",
        [],
    )
    judged = host.turn(
        message={"text": "Ana", "id": "m3"},
        silenced={"reason": "human", "understand": True},
        understand=(U(fields={"nome": "Ana"}),),
    )
    assert judged.llm_calls == 1

    agent = Agent(
        [
            {"id": "t", "steps": [{"id": "w", "wait": "1h"}, {"id": "p", "prompt": "Oi"}]},
            {"id": "mix", "steps": [{"id": "d", "do": "act"}, {"id": "s", "say": "x"}]},
        ],
        actions={"act": lambda params, ctx: None},
    )
    host = Host(agent)
    host.turn(start={"flow": "t", "key": "k"}, session=None)
    woken = host.at(HOUR).turn(wake="t#k:w:1789902000000", silenced="human")
    assert lines(woken)[-1] == ("prompt", "skipped", "silenced")
    mixed = host.turn(start={"flow": "mix", "key": "k"}, silenced="human")
    assert lines(mixed) == [("do", "ok", None), ("say", "skipped", "silenced")]


# 22 --------------------------------------------------------------------------------------
def test_22_flow_gone_and_step_gone() -> None:
    agent = catch_all_agent()
    gone_flow = {
        **new_session("s1"),
        "runs": [
            {
                "id": "velho#m0",
                "flowId": "velho",
                "anchor": "s1",
                "dedupeKey": "velho:s1:",
                "stepId": "x",
                "status": "asking",
                "trigger": {"kind": "message", "key": "m0"},
                "hop": 0,
                "startedAt": T0,
                "asked": {},
                "visits": {"x": 1},
                "outcomes": [],
            }
        ],
    }
    result = Host(agent).turn(message={"text": "oi", "id": "m1"}, session=gone_flow, speak=(S(),))
    assert ("if", "skipped", "flow-gone") in lines(result)

    gone_step = {
        **new_session("s1"),
        "runs": [
            {
                "id": "bv#m0",
                "flowId": "bv",
                "anchor": "s1",
                "dedupeKey": "bv:s1:",
                "stepId": "sumiu",
                "status": "waiting",
                "trigger": {"kind": "message", "key": "m0"},
                "hop": 0,
                "startedAt": T0,
                "asked": {},
                "visits": {"sumiu": 1},
                "outcomes": [],
                "waiting": {"kind": "timer", "key": "k", "until": T0, "setAt": T0},
            }
        ],
    }
    woken = Host(agent).turn(wake="k", session=gone_step)
    assert ("if", "skipped", "step-gone") in lines(woken)


# 23 --------------------------------------------------------------------------------------
def test_23_field_coercion() -> None:
    agent = Agent(
        [{"id": "f", "on": [{"message": ["orçamento"]}], "steps": [{"id": "q", "collect": ["n"]}]}],
        fields={
            "ok": {"type": "boolean"},
            "n": {"type": "number"},
            "x": {"type": "number"},
            "e": {"type": "string", "enum": ["quente", "morno"]},
        },
    )
    result = Host(agent).turn(
        message={"text": "…", "id": "m1"},
        session=None,
        speak=(S(),),
        understand=(
            U(
                flows={"f": 90},
                fields={"ok": "sim", "n": "1500,50", "x": "1.500,50", "e": "frio", "zz": 1},
            ),
        ),
    )
    assert result.session["data"] == {"ok": True, "n": 1500.5}
    dropped = [
        (line["code"], line["detail"])
        for line in result.outcomes
        if line.get("code") in ("bad-value", "not-in-enum", "unknown-field")
    ]
    assert dropped == [("bad-value", "x"), ("not-in-enum", "e"), ("unknown-field", "zz")]


# 24 --------------------------------------------------------------------------------------
def test_24_store_contract_in_brief() -> None:
    """The full Store contract runs against every backend in tests/stores/test_conformance.py."""
    store = MemoryStore()
    assert store.load("s1") is None
    fresh = new_session("s1")
    before = copy.deepcopy(fresh)
    assert store.save(fresh, 0)["version"] == 1 and fresh == before
    store.save(fresh, 1)
    with pytest.raises(SessionConflictError) as stale:
        store.save(fresh, 1)
    assert stale.value.actual_version == 2
    for bad in ({**fresh, "v": 3}, {**fresh, "id": "s2"}, {**fresh, "runs": [{"status": "done"}]}):
        with pytest.raises(InvalidSessionError):
            assert_session(bad, "s1")
    legacy = migrate_session({"data": {}, "currentFlow": "qualificacao", "currentStep": "q1"}, "s1")
    assert legacy["version"] == 0
    assert [(r["id"], r["status"]) for r in legacy["runs"]] == [("qualificacao#legacy", "asking")]
