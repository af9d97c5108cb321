"""The sentences an agent's users read, checked when it is built: a placeholder of a field that
may be given up has a fallback (or every way to its step checks the field is known), and an
agent written in several languages names each field its sentences name in each of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import FlowConfigurationError
from .flows import Flow, Step
from .templates import placeholders, texts_of


def _known_on_arrival(flow: Flow) -> dict[str, set[str]]:
    """For each step, the fields known whichever way the run arrives: those every way in
    checked with an ``if``'s ``known`` (on its true side) and did not clear since."""
    ways_in: dict[str, list[set[str]]] = {step.id: [] for step in flow.steps}
    if flow.steps:
        ways_in[flow.steps[0].id].append(set())
    for interrupt in flow.raw.get("interrupts") or []:
        _arrive(ways_in, interrupt.get("then"), set())
    for index, step in enumerate(flow.steps):
        following = flow.steps[index + 1].id if index + 1 < len(flow.steps) else None
        checked = _checked_known(step)
        _arrive(ways_in, step.then if "then" in step.raw else following, checked)
        for key in ("else", "onFail", "onGiveUp"):
            _arrive(ways_in, step.raw.get(key), set())
        for branch in step.raw.get("branches") or []:
            _arrive(ways_in, branch.get("then"), set())
    return {
        step_id: set.intersection(*arrivals) if arrivals else set()
        for step_id, arrivals in ways_in.items()
    }


def _checked_known(step: Step) -> set[str]:
    """The fields an ``if`` step's true side is known to have."""
    predicate = step.raw.get("if") if step.kind == "if" else None
    if isinstance(predicate, Mapping) and isinstance(predicate.get("known"), list | tuple):
        return set(predicate["known"])
    return set()


def _arrive(ways_in: dict[str, list[set[str]]], target: Any, known: set[str]) -> None:
    if isinstance(target, str) and target in ways_in:
        ways_in[target].append(known)
    elif isinstance(target, Mapping) and target.get("step") in ways_in:
        ways_in[target["step"]].append(known - set(target.get("clear") or []))


#: The texts a person reads: a step's, an interrupt's and a field's.
READ_STEP_TEXTS = ("say", "question", "ask", "prompt", "giveUp")
READ_FIELD_TEXTS = ("ask", "askAgain", "giveUp", "invalid", "stuck")


def check_templates(
    flows: Mapping[str, Flow],
    fields: Mapping[str, Any],
    interrupts: Sequence[Mapping[str, Any]] = (),
) -> None:
    """A text a person reads must not depend on a field that may be given up (any collected
    field not ``required``, after its ``maxAsks``) without a fallback
    (``{{data.name|there}}``), unless every way to its step passes an ``if`` that holds only
    when the field is known."""
    collected = {
        name
        for flow in flows.values()
        for step in flow.steps
        for name in step.collect
        if not fields[name].get("required")  # never given up: known once its step is passed
    }
    for path, text, known in _read_texts(flows, fields, interrupts):
        for placeholder, fallback in placeholders(text):
            scope, _, name = placeholder.partition(".")
            field_name = name.split(".")[0]
            if scope == "data" and field_name in collected - known and fallback is None:
                raise FlowConfigurationError(
                    path,
                    f"{{{{{placeholder}}}}} reads a field that is given up when it is not "
                    f"answered after maxAsks; give it a fallback, like "
                    f"{{{{{placeholder}|...}}}}, or reach the step only through an if that "
                    f"checks it is known",
                )


def check_labels(
    flows: Mapping[str, Flow],
    fields: Mapping[str, Any],
    interrupts: Sequence[Mapping[str, Any]] = (),
) -> None:
    """An agent that writes its sentences in several languages names its fields in each: a
    field whose label a sentence of the engine or model says (no ``ask`` asks for it, or no
    ``giveUp`` tells its give-up) has one per language written. A plain string is refused
    there: "size" would be said in a Portuguese sentence; ``{"en": "e-mail", "pt": "e-mail"}``
    says the same word is right in both. Labels alone make no agent multilingual."""
    languages = sorted(_languages_written(flows, fields, interrupts))
    if len(languages) < 2:
        return
    for flow in flows.values():
        for step in flow.steps:
            for name in step.collect:
                definition = fields[name]
                asked = "ask" in step.raw or "ask" in definition
                told = (
                    "stuck" in definition
                    if definition.get("required")
                    else "giveUp" in step.raw or "giveUp" in definition
                )
                label = definition.get("label")
                lacking = [
                    language
                    for language in languages
                    if not isinstance(label, Mapping) or language not in label
                ]
                if (asked and told) or not lacking:
                    continue
                example = ", ".join(f"{code!r}: ..." for code in languages)
                raise FlowConfigurationError(
                    f"fields.{name}.label",
                    f"the agent is written in {' and '.join(languages)}, and a sentence the "
                    f"engine writes names this field, which has no label in "
                    f"{' and '.join(lacking)}; give it one per language, like "
                    f"{{{example}}}, or its own ask and giveUp",
                )


def _languages_written(
    flows: Mapping[str, Flow],
    fields: Mapping[str, Any],
    interrupts: Sequence[Mapping[str, Any]] = (),
) -> set[str]:
    """Every language a sentence of the agent is given in (``{"en": …, "pt": …}``); its
    labels are names, not sentences, and do not count."""
    texts: list[Any] = [
        definition.get(key) for definition in fields.values() for key in READ_FIELD_TEXTS
    ]
    for flow in flows.values():
        texts += [step.raw.get(key) for step in flow.steps for key in READ_STEP_TEXTS]
        texts += [interrupt.get("say") for interrupt in flow.raw.get("interrupts") or []]
    texts += [interrupt.get("say") for interrupt in interrupts]
    return {language for text in texts if isinstance(text, Mapping) for language in text}


def _read_texts(
    flows: Mapping[str, Flow],
    fields: Mapping[str, Any],
    interrupts: Sequence[Mapping[str, Any]] = (),
) -> list[tuple[str, str, set[str]]]:
    """Every text a person reads, each language of it apart: (path, text, the fields known
    whenever it is said)."""
    texts: list[tuple[str, str, set[str]]] = []
    for f, flow in enumerate(flows.values()):
        known_at = _known_on_arrival(flow)
        for s, step in enumerate(flow.steps):
            for key in READ_STEP_TEXTS:
                for text in texts_of(step.raw.get(key, "")):
                    texts.append((f"flows[{f}].steps[{s}].{key}", text, known_at[step.id]))
        for i, interrupt in enumerate(flow.raw.get("interrupts") or []):
            for text in texts_of(interrupt.get("say", "")):
                texts.append((f"flows[{f}].interrupts[{i}].say", text, set()))
    for name, definition in fields.items():
        for key in READ_FIELD_TEXTS:
            for text in texts_of(definition.get(key, "")):
                texts.append((f"fields.{name}.{key}", text, set()))
    for i, interrupt in enumerate(interrupts):  # the agent's own, heard in any state
        for text in texts_of(interrupt.get("say", "")):
            texts.append((f"interrupts[{i}].say", text, set()))
    return texts
