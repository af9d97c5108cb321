"""Flow validation at construction: every mistake names the path of the bad key."""

from __future__ import annotations

from typing import Any

import pytest

from warlock_sessions.engine import Agent
from warlock_sessions.errors import FlowConfigurationError

FIELDS = {"nome": {"type": "string"}}


def build(flows: list[Any], **options: Any) -> Agent:
    options.setdefault("fields", FIELDS)
    options.setdefault("actions", {"salvar": lambda params, ctx: None})
    return Agent(flows, **options)


def ok_flow(**overrides: Any) -> dict[str, Any]:
    return {"id": "f", "steps": [{"id": "a", "say": "oi"}], **overrides}


@pytest.mark.parametrize(
    ("flows", "path", "why"),
    [
        (
            [
                ok_flow(id="f0"),
                ok_flow(id="f1"),
                ok_flow(id="g", steps=[{"id": "a", "say": "x"}, {"id": "b", "wait": "2x"}]),
            ],
            "flows[2].steps[1].wait",
            "'2x' is not a duration",
        ),
        ([ok_flow(id="a:b")], "flows[0].id", "without ':'"),
        ([ok_flow(), ok_flow()], "flows[1].id", "used twice"),
        ([ok_flow(steps=[{"id": "end", "say": "x"}])], "flows[0].steps[0].id", "reserved"),
        (
            [ok_flow(steps=[{"id": "a", "say": "x"}, {"id": "a", "say": "y"}])],
            "flows[0].steps[1].id",
            "used twice",
        ),
        ([ok_flow(steps=[{"id": "a"}])], "flows[0].steps[0]", "exactly one of"),
        (
            [ok_flow(steps=[{"id": "a", "say": "x", "do": "salvar"}])],
            "flows[0].steps[0]",
            "exactly one of",
        ),
        (
            [ok_flow(steps=[{"id": "a", "collect": ["idade"]}])],
            "flows[0].steps[0].collect[0]",
            "unknown field",
        ),
        (
            [ok_flow(steps=[{"id": "a", "do": "enviar"}])],
            "flows[0].steps[0].do",
            "unknown action 'enviar'",
        ),
        (
            [ok_flow(steps=[{"id": "a", "say": "x", "then": "z"}])],
            "flows[0].steps[0].then",
            "no step 'z'",
        ),
        (
            [ok_flow(steps=[{"id": "a", "say": "x", "then": {"flow": "nada"}}])],
            "flows[0].steps[0].then.flow",
            "no flow 'nada'",
        ),
        (
            [ok_flow(steps=[{"id": "a", "say": "x", "then": {"step": "z"}}])],
            "flows[0].steps[0].then.step",
            "no step 'z'",
        ),
        (
            [ok_flow(steps=[{"id": "a", "if": {"vip": True}}])],
            "flows[0].steps[0].if.vip",
            "unknown condition",
        ),
        (
            [ok_flow(steps=[{"id": "a", "collect": ["nome"], "maxAsks": 0}])],
            "flows[0].steps[0].maxAsks",
            ">= 1",
        ),
        (
            [ok_flow(steps=[{"id": "a", "collect": ["nome"], "branches": [{"then": "a"}]}])],
            "flows[0].steps[0].branches[0]",
            "exactly one of when",
        ),
        (
            [ok_flow(steps=[{"id": "a", "wait": {"event": "pago", "upTo": "sempre"}}])],
            "flows[0].steps[0].wait.upTo",
            "not a duration",
        ),
        ([ok_flow(on=[{"message": ["oi"], "silence": "1h"}])], "flows[0].on[0]", "exactly one of"),
        (
            [ok_flow(on=[{"silence": "1h", "after": "1m"}])],
            "flows[0].on[0].after",
            "only event triggers",
        ),
        (
            [ok_flow(on=[{"message": ["oi"], "repeat": "twice"}])],
            "flows[0].on[0].repeat",
            "expected 'once'",
        ),
        (
            [ok_flow(on=[{"event": "pago", "repeat": {"cooldown": "soon"}}])],
            "flows[0].on[0].repeat.cooldown",
            "not a duration",
        ),
        ([ok_flow(on=[{"message": "oi"}])], "flows[0].on[0].message", "list of text"),
        ([ok_flow(onEnd="loop")], "flows[0].onEnd", "end, stay or reset"),
        ("not a list", "flows", "list of flows"),
    ],
)
def test_a_bad_flow_names_the_path(flows: Any, path: str, why: str) -> None:
    with pytest.raises(FlowConfigurationError) as caught:
        build(flows)
    assert caught.value.path == path
    assert why in str(caught.value)
    assert str(caught.value).startswith(f"{path}: ")


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"fields": {"x": {"type": "date"}}}, "fields.x.type"),
        ({"fields": {"x": {"type": "string", "extract": "sometimes"}}}, "fields.x.extract"),
        ({"actions": {"salvar": "not callable"}}, "actions.salvar"),
        ({"idle": "loud"}, "idle"),
    ],
)
def test_bad_agent_options_name_the_option(options: dict[str, Any], path: str) -> None:
    with pytest.raises(FlowConfigurationError) as caught:
        build([ok_flow()], **options)
    assert caught.value.path == path


def test_a_complete_flow_in_json_form_is_accepted() -> None:
    agent = build(
        [
            {
                "id": "venda",
                "anchor": "lead",
                "clearOnStart": ["nome"],
                "onEnd": "reset",
                "while": {"silenced": False},
                "on": [
                    {"message": ["comprar", "!cancelar"], "if": {"known": []}},
                    {"event": "pago", "after": "10m", "businessHours": True},
                    {
                        "mention": ["promo"],
                        "extract": {"codigo": {"type": "string"}},
                        "repeat": {"cooldown": "1h"},
                    },
                ],
                "steps": [
                    {
                        "id": "q",
                        "collect": ["nome"],
                        "maxAsks": 2,
                        "question": "Seu nome?",
                        "branches": [
                            {"when": "quer desistir", "then": "end"},
                            {"if": {"known": ["nome"]}, "then": "w"},
                        ],
                    },
                    {
                        "id": "w",
                        "wait": "1d",
                        "else": {"step": "q", "clear": ["nome"]},
                        "branches": [{"if": {"equals": {"nome": "Ana"}}, "then": "s"}],
                    },
                    {"id": "s", "say": "Oi {{data.nome|}}", "once": True},
                    {"id": "d", "do": "salvar", "with": {"quem": "{{data.nome}}"}, "onFail": "end"},
                    {"id": "e", "wait": {"event": "pago", "upTo": "7d"}, "else": {"flow": "venda"}},
                ],
            }
        ]
    )
    assert list(agent.flows) == ["venda"]
    assert [step.kind for step in agent.flows["venda"].steps] == [
        "talk",
        "wait",
        "say",
        "do",
        "wait_event",
    ]


@pytest.mark.parametrize(
    ("flows", "fields", "path", "hint"),
    [
        ([ok_flow(stepz=[])], {}, "flows[0].stepz", "did you mean 'steps'?"),
        (
            [ok_flow(steps=[{"id": "a", "say": "x", "thn": "end"}])],
            {},
            "flows[0].steps[0].thn",
            "did you mean 'then'?",
        ),
        (
            [ok_flow(steps=[{"id": "a", "collect": ["size"], "maxAsk": 2}])],
            {"size": {"type": "string"}},
            "flows[0].steps[0].maxAsk",
            "did you mean 'maxAsks'?",
        ),
        (
            [ok_flow(steps=[{"id": "a", "say": "x", "media": None, "onFail": "end"}])],
            {},
            "flows[0].steps[0].onFail",
            "known keys",
        ),
        (
            [ok_flow(steps=[{"id": "a", "wait": {"event": "paid", "upto": "1d"}}])],
            {},
            "flows[0].steps[0].wait.upto",
            "did you mean 'upTo'?",
        ),
        (
            [
                ok_flow(
                    steps=[
                        {
                            "id": "a",
                            "wait": "1h",
                            "branches": [{"if": {"known": []}, "then": "end", "when": "x"}],
                        }
                    ]
                )
            ],
            {},
            "flows[0].steps[0].branches[0].when",
            "unknown key",
        ),
        (
            [
                ok_flow(
                    steps=[
                        {"id": "a", "collect": ["size"], "branches": [{"when": "x", "thne": "end"}]}
                    ]
                )
            ],
            {"size": {"type": "string"}},
            "flows[0].steps[0].branches[0].thne",
            "did you mean 'then'?",
        ),
        (
            [ok_flow(steps=[{"id": "a", "say": "x", "then": {"step": "a", "clearr": []}}])],
            {},
            "flows[0].steps[0].then.clearr",
            "did you mean 'clear'?",
        ),
        (
            [ok_flow()],
            {"size": {"type": "string", "enumm": ["small", "large"]}},
            "fields.size.enumm",
            "did you mean 'enum'?",
        ),
    ],
)
def test_an_unknown_key_is_refused_with_the_closest_valid_one(
    flows: Any, fields: dict[str, Any], path: str, hint: str
) -> None:
    """A mistyped key ("enumm") was accepted, and "quero pizza" was then stored as a size."""
    with pytest.raises(FlowConfigurationError) as caught:
        build(flows, fields=fields)
    assert caught.value.path == path
    assert hint in str(caught.value)


@pytest.mark.parametrize(
    ("flows", "path", "hint"),
    [
        (
            [ok_flow(steps=[{"id": "a", "colect": ["nome"]}])],
            "flows[0].steps[0].colect",
            "'collect'",
        ),
        ([ok_flow(on=[{"mesage": ["oi"]}])], "flows[0].on[0].mesage", "'message'"),
        (
            [ok_flow(on=[{"message": ["oi"], "repaet": "once"}])],
            "flows[0].on[0].repaet",
            "'repeat'",
        ),
        ([ok_flow(interrupts=[{"whn": "sair"}])], "flows[0].interrupts[0].whn", "'when'"),
    ],
)
def test_a_mistyped_kind_names_the_key_and_what_it_may_mean(
    flows: Any, path: str, hint: str
) -> None:
    """ "colect" said only that a step has exactly one kind; "whn" had no suggestion."""
    with pytest.raises(FlowConfigurationError) as caught:
        build(flows)
    assert caught.value.path == path and f"did you mean {hint}?" in str(caught.value)


PIZZA_FIELDS = {
    "size": {"type": "string", "enum": ["small", "large"]},
    "confirmed": {"type": "boolean"},
}


def pizza(**changes: Any) -> list[dict[str, Any]]:
    """An order flow and a reminder, each part replaceable by a keyword."""
    order: dict[str, Any] = {
        "id": "order",
        "on": [{"message": ["pizza"]}],
        "steps": [
            {"id": "choose", "collect": ["size"]},
            {"id": "confirm", "collect": ["confirmed"]},
            {"id": "check", "if": {"equals": {"confirmed": True}}, "then": "done"},
            {"id": "done", "say": "One {{data.size|}} pizza, coming up!"},
        ],
    }
    nudge = {
        "id": "nudge",
        "on": [{"silence": "2m", "if": {"running": ["order"]}}],
        "steps": [{"id": "ask", "prompt": "Still hungry?"}],
    }
    for key, value in changes.items():
        flow, _, part = key.partition("__")
        target = order if flow == "order" else nudge
        if part.startswith("step"):
            index = int(part[4:])
            target["steps"][index] = {"id": target["steps"][index]["id"], **value}
        else:
            target[part] = value
    return [order, nudge]


@pytest.mark.parametrize(
    ("flows", "path", "why"),
    [
        (
            pizza(order__step3={"say": "One {{data.sise|}} pizza!"}),
            "flows[0].steps[3].say",
            "reads {{data.sise}}, but no field 'sise' of the agent's; did you mean 'size'?",
        ),
        (
            pizza(order__step2={"if": {"equals": {"confirmd": True}}}),
            "flows[0].steps[2].if.equals.confirmd",
            "tests no field 'confirmd' of the agent's; did you mean 'confirmed'?",
        ),
        (
            pizza(nudge__on=[{"silence": "2m", "if": {"running": ["orders"]}}]),
            "flows[1].on[0].if.running[0]",
            "no flow 'orders' on this agent; did you mean 'order'?",
        ),
        (
            pizza(order__step2={"if": {"known": ["szie"]}}),
            "flows[0].steps[2].if.known[0]",
            "did you mean 'size'?",
        ),
        (
            pizza(order__clearOnStart=["confirmd"]),
            "flows[0].clearOnStart[0]",
            "clears no field 'confirmd'",
        ),
        (
            pizza(
                order__step2={
                    "if": {"equals": {"confirmed": True}},
                    "else": {"step": "choose", "clear": ["sizes"]},
                }
            ),
            "flows[0].steps[2].else.clear[0]",
            "did you mean 'size'?",
        ),
        (
            pizza(order__while={"equals": {"confirmed": None, "paid": True}}),
            "flows[0].while.equals.paid",
            "data an action writes is declared as a field too",
        ),
        (
            pizza(order__step3={"say": "Hi {{dat.size|there}}"}),
            "flows[0].steps[3].say",
            "reads 'dat', which no template has; did you mean 'data'?",
        ),
        (
            pizza(order__step3={"do": "send", "with": {"to": "{{data.emial}}"}}),
            "flows[0].steps[3].with.to",
            "no field 'emial'",
        ),
    ],
    ids=[
        "template",
        "equals",
        "running",
        "known",
        "clearOnStart",
        "a move's clear",
        "undeclared action data",
        "scope",
        "action params",
    ],
)
def test_a_misspelt_reference_is_refused_at_load_with_the_closest_name(
    flows: list[dict[str, Any]], path: str, why: str
) -> None:
    with pytest.raises(FlowConfigurationError) as caught:
        Agent(flows, fields=PIZZA_FIELDS, actions={"send": lambda params, ctx: None})
    assert caught.value.path == path
    assert why in str(caught.value)


def test_references_in_fields_interrupts_and_the_idle_speaker_are_resolved() -> None:
    fields = {**PIZZA_FIELDS, "flavour": {"type": "string", "ask": "Which, {{data.nmae|}}?"}}
    with pytest.raises(FlowConfigurationError, match="did you mean 'size'") as caught:
        Agent(pizza(), fields=PIZZA_FIELDS, interrupts=[{"when": "x", "say": "{{data.siz|}}"}])
    assert caught.value.path == "interrupts[0].say"
    with pytest.raises(FlowConfigurationError) as caught:
        Agent(pizza(), fields=fields)
    assert caught.value.path == "fields.flavour.ask"
    with pytest.raises(FlowConfigurationError) as caught:
        Agent(pizza(), fields=PIZZA_FIELDS, idle={"prompt": "Hi {{data.sizes|}}"})
    assert caught.value.path == "idle.prompt"


def test_the_references_the_issue_found_load_when_spelt_right() -> None:
    agent = Agent(pizza(), fields=PIZZA_FIELDS)
    assert list(agent.flows) == ["order", "nudge"]


def test_the_whole_data_may_be_given_to_an_action() -> None:
    """``{{data}}`` names no field: it is all of them."""
    flows = pizza(order__step3={"do": "send", "with": {"all": "{{data}}"}})
    Agent(flows, fields=PIZZA_FIELDS, actions={"send": lambda params, ctx: None})
