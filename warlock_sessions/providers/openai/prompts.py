"""What is sent to the model and how its replies are read, for ``understand`` and ``speak``:
the instructions, the JSON schemas, the tool descriptions and the reply envelope. Pure: no
HTTP, testable without a server."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ...engine.flows import Flow
from ...engine.ports import (
    IdleRequest,
    ProviderError,
    SpeakRequest,
    Spoken,
    TalkRequest,
    Understanding,
    UnderstandRequest,
)
from ...engine.templates import localized, render, texts_of
from ..recognisers.language import language_of

JSON_TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}
UNDERSTAND_SYSTEM = (
    "You read one customer message for a conversational agent and judge it. Reply with one JSON "
    "object and nothing else, matching the schema. flows: for each candidate flow, 0-100 for how "
    "well the message fits it. mentions: whether the message brings up each topic. extract: the "
    "values each mentioned topic asks for, or null. branches: whether each condition holds for "
    "the message. fields: each value the customer stated in the message, or null when they did "
    "not; never a field's description. Dates as YYYY-MM-DD, counting from today."
)
SPEAK_ENVELOPE = (
    'Reply with one JSON object and nothing else: {"message": the text to send to the customer'
    "{fields}}."
)
JSON_ONLY = "Your previous reply was not valid JSON. Reply again with only the JSON object."
SPEAK_FIRST = "(The customer has not written: you speak first.)"
UNDERSTAND_HISTORY = 10  # recent history items shown to understand
SPEAK_HISTORY = 20  # and to speak


# -- understand ---------------------------------------------------------------------------


def understand_schema(request: UnderstandRequest) -> dict[str, Any]:
    """The JSON schema of an understanding: one property per question the request asks."""
    mention_flows = request.mention_flows
    return json_object(
        {
            "flows": json_object(
                {
                    flow.id: {"type": "integer", "minimum": 0, "maximum": 100}
                    for flow in _scored(request)
                }
            ),
            "mentions": json_object({flow.id: {"type": "boolean"} for flow in mention_flows}),
            "extract": json_object(
                {
                    flow.id: json_object(
                        {name: nullable(d) for name, d in _extract_fields(flow).items()}
                    )
                    for flow in mention_flows
                }
            ),
            "branches": json_object({q.key: {"type": "boolean"} for q in request.branches}),
            "fields": json_object({name: nullable(d) for name, d in request.fields.items()}),
        }
    )


def understand_messages(request: UnderstandRequest) -> list[dict[str, Any]]:
    # No key here is one the answer uses: a small model echoed a "fields" brief back as its
    # answer's "fields".
    language = request.language
    brief = {
        "today": _today(request.now),
        "message": request.text,
        "recent_history": list(request.history)[-UNDERSTAND_HISTORY:],
        "candidate_flows": [_describe_flow(flow, language) for flow in _scored(request)],
        "topics": [_describe_flow(flow, language) for flow in request.mention_flows],
        "conditions": [{"key": q.key, "condition": q.when} for q in request.branches],
        "field_descriptions": {
            name: describe_field(d, language) for name, d in request.fields.items()
        },
    }
    return [
        {"role": "system", "content": UNDERSTAND_SYSTEM},
        {"role": "user", "content": json.dumps(brief, ensure_ascii=False, default=str)},
    ]


def read_understanding(
    reply: Mapping[str, Any], llm_calls: int, request: UnderstandRequest | None = None
) -> Understanding:
    """The understanding in a reply, keeping only values of the right type: scores within
    0-100, no field value that merely repeats what the prompt said of that field, and no
    name, e-mail or phone the customer did not write (the engine then checks each value
    against its field's type and format). The message's language is heard from its words,
    as the RuleModel hears it."""
    return Understanding(
        flows={
            k: min(100, max(0, v))
            for k, v in _mapping(reply.get("flows")).items()
            if isinstance(v, int | float) and not isinstance(v, bool) and v == v
        },
        mentions={k: v is True for k, v in _mapping(reply.get("mentions")).items()},
        extract={
            k: dict(v) for k, v in _mapping(reply.get("extract")).items() if isinstance(v, Mapping)
        },
        branches={k: v is True for k, v in _mapping(reply.get("branches")).items()},
        fields={
            k: v
            for k, v in _mapping(reply.get("fields")).items()
            if v is not None and (request is None or _stated(request, k, v))
        },
        llm_calls=llm_calls,
        language=language_of(request.text) if request is not None and request.text else None,
    )


def _stated(request: UnderstandRequest, name: str, value: Any) -> bool:
    definition = request.fields.get(name) or {}
    if isinstance(value, str) and _folded(value) in _echoes(name, definition, request.language):
        return False
    return said_by_the_customer(definition, value, request.text)


def _echoes(name: str, definition: Mapping[str, Any], language: str | None) -> set[str]:
    """What the prompt said of one field, as a model echoing it would write it back (not
    its options: one of those is an answer)."""
    said = {_folded(describe_field(definition, language)), _folded(name)}
    for key in ("label", "description", "ask", "format", "type"):
        for text in texts_of(definition.get(key) or ""):
            said.add(_folded(str(text)))
    options = {_folded(str(option)) for option in definition.get("enum") or ()}
    return said - options - {""}


#: The formats whose value must be in the customer's own words: a model makes these up
#: (a colleague's phone, "The name of the customer who has booked your reservation").
_GROUNDED = {
    "email": lambda value, text: _folded(value) in _folded(text),
    "phone": lambda value, text: _digits(value) in _digits(text),
    "name": lambda value, text: all(word in _folded(text) for word in _folded(value).split()),
}


def said_by_the_customer(definition: Mapping[str, Any], value: Any, text: str | None) -> bool:
    """Whether a value of a name, e-mail or phone field is in what the customer wrote."""
    check = _GROUNDED.get(definition.get("format") or "")
    if check is None or not isinstance(value, str):
        return True
    return bool(text) and bool(check(value, text or ""))


def _digits(text: str) -> str:
    return "".join(char for char in text if char.isdigit()) or "\0"


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


def _today(now: datetime) -> str:
    return f"{now.date().isoformat()} ({now.strftime('%A')})"


def _scored(request: UnderstandRequest) -> list[Flow]:
    """The flows to score: the one holding the floor first, then the eligible message flows."""
    return [*([request.floor_flow] if request.floor_flow else []), *request.message_flows]


def _extract_fields(flow: Flow) -> Mapping[str, Any]:
    trigger = flow.trigger_of("mention")
    return trigger.extract if trigger is not None and trigger.extract else {}


# -- speak --------------------------------------------------------------------------------


def pending_of(request: SpeakRequest) -> list[str]:
    """The fields the talk step still asks for (none for an idle reply)."""
    return list(request.talk.pending) if isinstance(request.talk, TalkRequest) else []


def speak_schema(request: SpeakRequest) -> dict[str, Any]:
    """The reply envelope's schema: ``message`` and one nullable property per pending field."""
    return json_object(
        {
            "message": {"type": "string"},
            **{
                name: nullable(request.fields.get(name) or {"type": "string"})
                for name in pending_of(request)
            },
        }
    )


def speak_messages(request: SpeakRequest) -> list[dict[str, Any]]:
    """The system prompt (instructions, the step's prompt, what to ask, the envelope), the
    recent history, and the customer's message (or a note that the assistant speaks first)."""
    scope = _scope(request)
    lines = [render(_instruction_text(item), scope) for item in request.instructions]
    lines.append(f"Today is {_today(request.now)}.")
    talk = request.talk
    if isinstance(talk, IdleRequest):
        lines.append(render(localized(talk.idle.get("prompt") or "", request.language), scope))
    else:
        lines += _talk_lines(request, talk, scope)
    field_list = "".join(
        f', "{name}": the value the customer gave in their last message or null'
        for name in pending_of(request)
    )
    if request.language:
        lines.append(
            f"The conversation is in the language with code {request.language}: reply in it."
        )
    lines.append(SPEAK_ENVELOPE.replace("{fields}", field_list))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "\n\n".join(line for line in lines if line)}
    ]
    messages += [
        {"role": item["role"], "content": str(item["content"])}
        for item in list(request.history)[-SPEAK_HISTORY:]
        if isinstance(item, Mapping)
        and item.get("role") in ("user", "assistant")
        and item.get("content")
    ]
    if request.input_kind == "message" and request.text:
        messages.append({"role": "user", "content": request.text})
    else:
        messages.append({"role": "user", "content": SPEAK_FIRST})
    return messages


def _scope(request: SpeakRequest) -> dict[str, Any]:
    talk = request.talk
    run_input = talk.run.get("input") if isinstance(talk, TalkRequest) else None
    return {"data": request.data, "context": request.context, "input": run_input}


def _talk_lines(request: SpeakRequest, talk: TalkRequest, scope: dict[str, Any]) -> list[str]:
    step = talk.step
    lines = [render(localized(step.raw.get("prompt") or "", request.language), scope)]
    if talk.pending:
        wanted = []
        for name in talk.pending:
            definition = request.fields.get(name) or {}
            ask = definition.get("ask") or step.raw.get("ask")
            how = f': ask like "{render(localized(ask, request.language), scope)}"' if ask else ""
            wanted.append(f"- {name} ({describe_field(definition, request.language)}){how}")
        lines.append("Ask the customer for what is still missing:\n" + "\n".join(wanted))
    if talk.final:
        lines.append(
            "This was the last try for "
            + ", ".join(talk.final)
            + ": if the message does not give it, do not ask for it again; go on without it."
        )
    if talk.refused:
        lines.append(
            "The customer's message tried to change "
            + ", ".join(f"{name} ({why})" for name, why in talk.refused.items())
            + ", which was refused: say so, with the allowed values, and ask again."
        )
    known = {k: v for k, v in request.data.items() if v not in (None, "")}
    if known:
        lines.append("Known so far: " + json.dumps(known, ensure_ascii=False, default=str))
    return lines


def read_envelope(
    envelope: Mapping[str, Any],
    request: SpeakRequest,
    *,
    data: dict[str, Any],
    tool_calls: list[dict[str, Any]],
    llm_calls: int,
) -> Spoken:
    """The spoken reply in an envelope; an envelope without a message is a failed reply."""
    message = envelope.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ProviderError("provider-unavailable", True, detail="the reply had no message")
    fields = {
        name: envelope[name]
        for name in pending_of(request)
        if envelope.get(name) is not None
        and said_by_the_customer(request.fields.get(name) or {}, envelope[name], request.text)
    }
    return Spoken(
        message=message, fields=fields, data=data, tool_calls=tool_calls, llm_calls=llm_calls
    )


def tool_schema(tool: Any) -> dict[str, Any]:
    """A tool (a mapping or an object with ``id``, ``description``, ``parameters``) as the
    wire's function definition."""

    def get(key: str, default: Any = None) -> Any:
        if isinstance(tool, Mapping):
            return tool.get(key, default)
        return getattr(tool, key, default)

    return {
        "type": "function",
        "function": {
            "name": get("id"),
            "description": get("description", ""),
            "parameters": get("parameters") or {"type": "object", "properties": {}},
        },
    }


def tools_schema(tools: Sequence[Any]) -> list[dict[str, Any]]:
    return [tool_schema(tool) for tool in tools]


# -- JSON ---------------------------------------------------------------------------------


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a model's reply, tolerating code fences and chatter around it."""
    candidates = [text.strip()]
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        candidates.append(fenced[1].strip())
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{") : text.rindex("}") + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def with_json_instruction(
    messages: list[dict[str, Any]], schema: dict[str, Any]
) -> list[dict[str, Any]]:
    """The messages with the schema spelled out in the system prompt, for a server that cannot
    constrain its output to a schema."""
    note = "Answer with a JSON object valid against this JSON schema: " + json.dumps(schema)
    return [{**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}, *messages[1:]]


def repair_messages(messages: list[dict[str, Any]], content: str) -> list[dict[str, Any]]:
    return [
        *messages,
        {"role": "assistant", "content": content},
        {"role": "user", "content": JSON_ONLY},
    ]


def json_object(properties: dict[str, Any]) -> dict[str, Any]:
    """A strict object schema: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def nullable(definition: Mapping[str, Any]) -> dict[str, Any]:
    """A field definition as a schema that also allows ``null`` (the value was not given)."""
    kind = JSON_TYPES.get(definition.get("type", "string"), "string")
    schema: dict[str, Any] = {"type": [kind, "null"]}
    if definition.get("enum"):
        schema["enum"] = [*definition["enum"], None]
    if definition.get("description"):
        schema["description"] = definition["description"]
    return schema


#: How a value of a format is written, where its name alone does not say.
_FORMAT_HINTS = {"time": "time of day as HH:MM, 24-hour"}


def describe_field(definition: Mapping[str, Any], language: str | None = None) -> str:
    """A field as a line of the prompt; texts given per language in the conversation's."""
    parts = [definition.get("type", "string")]
    if definition.get("format"):
        parts.append(_FORMAT_HINTS.get(definition["format"], definition["format"]))
    if definition.get("enum"):
        parts.append("one of " + ", ".join(map(str, definition["enum"])))
    described = definition.get("description") or definition.get("label")
    if described:
        parts.append(localized(described, language))
    for key, said in (("min", "at least"), ("max", "at most"), ("pattern", "matching")):
        if key in definition:
            parts.append(f"{said} {definition[key]}")
    if definition.get("invalid"):
        invalid = localized(definition["invalid"], language)
        parts.append(f'when the answer breaks these, say: "{invalid}"')
    return "; ".join(parts)


def _describe_flow(flow: Flow, language: str | None = None) -> dict[str, Any]:
    """A flow as the prompt shows it. A ``!phrase`` rules the flow out: it is no example."""
    phrases = [phrase for trigger in flow.triggers for phrase in trigger.phrases]
    described = {
        "id": flow.id,
        "name": localized(flow.raw.get("name") or flow.id, language),
        "description": localized(flow.raw.get("description") or "", language),
        "examples": [phrase for phrase in phrases if not phrase.startswith("!")],
    }
    excluded = [phrase[1:] for phrase in phrases if phrase.startswith("!")]
    if excluded:
        described["not_when_the_message_says"] = excluded
    return described


def _instruction_text(item: Any) -> str:
    if isinstance(item, Mapping):
        return str(item.get("text") or item.get("content") or "")
    return str(item)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
