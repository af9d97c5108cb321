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


def _known_on_arrival(flow: Flow, fields: Mapping[str, Any]) -> dict[str, set[str]]:
    """For each step, the fields known whichever way the run arrives: checked with an
    ``if``'s ``known`` on its true side, or collected by a step as ``required`` (which is
    never passed with it unknown), on every way in, and not cleared since. A way in from an
    interrupt knows nothing; the analysis runs until nothing changes (loops included)."""
    known_at: dict[str, set[str]] = {step.id: set(fields) for step in flow.steps}
    for _ in range(len(flow.steps) + 2):
        found = {
            step_id: set.intersection(*arrivals) if arrivals else set()
            for step_id, arrivals in _ways_in(flow, fields, known_at).items()
        }
        if found == known_at:
            break
        known_at = found
    return known_at


def _ways_in(
    flow: Flow, fields: Mapping[str, Any], known_at: Mapping[str, set[str]]
) -> dict[str, list[set[str]]]:
    """For each step, what each way into it knows, given what is known at each step."""
    ways_in: dict[str, list[set[str]]] = {step.id: [] for step in flow.steps}
    if flow.steps:
        ways_in[flow.steps[0].id].append(set())
    for interrupt in flow.raw.get("interrupts") or []:
        _arrive(ways_in, interrupt.get("then"), set())
    for index, step in enumerate(flow.steps):
        following = flow.steps[index + 1].id if index + 1 < len(flow.steps) else None
        # A step that asks for a field may leave it unknown (given up), unless required.
        held = known_at[step.id] - set(step.collect)
        passed = held | _checked_known(step, fields)
        _arrive(ways_in, step.then if "then" in step.raw else following, passed)
        _arrive(ways_in, step.raw.get("onGiveUp"), passed)  # only once required are in
        for key in ("else", "onFail"):
            _arrive(ways_in, step.raw.get(key), held)
        for branch in step.raw.get("branches") or []:
            _arrive(ways_in, branch.get("then"), held)
    return ways_in


def _checked_known(step: Step, fields: Mapping[str, Any]) -> set[str]:
    """The fields a step leaves known on its way on: an ``if``'s ``known`` (its true side),
    a talk step's ``required`` fields."""
    if step.kind == "talk":
        return {name for name in step.collect if fields[name].get("required")}
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
    """A text a person reads must not depend on a field that may be unknown there (any
    collected field: given up after its ``maxAsks``, or not asked yet) without a fallback
    (``{{data.name|there}}``), unless every way to its step passes an ``if`` that holds only
    when the field is known, or the step that collects it as ``required``."""
    collected = {name for flow in flows.values() for step in flow.steps for name in step.collect}
    for path, text, known in _read_texts(flows, fields, interrupts):
        for placeholder, fallback in placeholders(text):
            scope, _, name = placeholder.partition(".")
            field_name = name.split(".")[0]
            if scope == "data" and field_name in collected - known and fallback is None:
                raise FlowConfigurationError(
                    path,
                    f"{{{{{placeholder}}}}} reads a field that may be unknown here (given up "
                    f"after maxAsks, or not asked yet); give it a fallback, like "
                    f"{{{{{placeholder}|...}}}}, or reach the step only through an if that "
                    f"checks it is known, or past the step that collects it as required",
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
                    f"{{{example}}}, or its own ask and giveUp (stuck, when it is required)",
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
        known_at = _known_on_arrival(flow, fields)
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
