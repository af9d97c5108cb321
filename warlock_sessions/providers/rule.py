"""RuleModel: the offline, deterministic model of the embedded default (no network, no deps).

It routes by the flows' trigger phrases, recognises typed values, and phrases replies from the
steps' own ``prompt``/``ask`` templates, so a flow written for an LLM runs, more plainly, without
one. It is also what tests and ``make demo`` use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..engine.fields import coerce_field, is_known
from ..engine.flows import Flow, Step
from ..engine.ports import (
    IdleRequest,
    SpeakRequest,
    Spoken,
    TalkRequest,
    Understanding,
    UnderstandRequest,
)
from ..engine.predicates import BUILT_IN, PredicateContext, evaluate
from ..engine.templates import label_language, localized, render
from .recognisers import heard, language_of, value_for
from .text import phrases_score, tokens

MENTION_MIN = 80
BRANCH_MIN = 80

_WORDS: dict[str, dict[str, str]] = {
    "en": {
        "ask": "What is your {label}?",
        "ask_many": "What are your {labels}?",
        "and": " and ",
        "thanks": "Thanks!",
        "idle": "Sorry, I didn't get that. Could you say it another way?",
        "sorry": "Sorry, I didn't catch that.",
        "email": "That doesn't look like an e-mail address.",
        "phone": "That doesn't look like a phone number.",
        "date": "I couldn't read a date in that.",
        "time": "I couldn't read a time in that.",
        "name": "I didn't catch your name.",
        "number": "I need a number.",
        "boolean": "Please answer yes or no.",
        "enum": "Please choose one of: {options}.",
        "range": "I can't take that one.",
    },
    "pt": {
        "ask": "Qual é o seu {label}?",
        "ask_many": "Quais são os seus {labels}?",
        "and": " e ",
        "thanks": "Obrigado!",
        "idle": "Desculpe, não entendi. Pode dizer de outro jeito?",
        "sorry": "Desculpe, não entendi.",
        "email": "Isso não parece um e-mail.",
        "phone": "Isso não parece um telefone.",
        "date": "Não consegui entender a data.",
        "time": "Não consegui entender o horário.",
        "name": "Não entendi o seu nome.",
        "number": "Preciso de um número.",
        "boolean": "Responda sim ou não, por favor.",
        "enum": "Escolha uma destas opções: {options}.",
        "range": "Esse valor eu não posso aceitar.",
    },
}


def _words(language: str) -> dict[str, str]:
    """The RuleModel's own sentences in ``language`` (English for one it does not speak)."""
    return _WORDS.get(language, _WORDS["en"])


class RuleModel:
    """Deterministic understand/speak from phrases, recognisers and templates.

    ``language`` is ``"en"``, ``"pt"`` or ``"auto"``: the conversation's language, which it
    tells the engine from the words people write (``Understanding.language``; the engine keeps
    it in ``metadata["language"]``) and uses to read what only a language can tell (``03/04``)
    and to reply. A message that shows its own language is read in it; replies are in the
    conversation's (English until it is known). Field definitions may carry ``label`` (how
    the field is named when asked), ``ask`` (the question, a template), ``invalid`` and
    ``format`` (``email``, ``phone``, ``date``, ``time``, ``name``) to choose a recogniser;
    any text may be given per language (``{"en": ..., "pt": ...}``). It makes no LLM calls.
    """

    #: It computes in memory, so an async host may run its turns on the event loop.
    blocking = False

    def __init__(self, language: str = "auto") -> None:
        if language not in ("auto", "en", "pt"):
            raise ValueError(f"language must be 'auto', 'en' or 'pt', not {language!r}")
        self.language = language

    def _reading(self, text: str, conversation: str | None) -> str | None:
        """The language to read ``text`` in: pinned, else its own, else the conversation's."""
        if self.language != "auto":
            return self.language
        return language_of(text) or conversation

    def _replying(self, text: str, conversation: str | None) -> str:
        """The language to reply in: pinned, else the conversation's, else the message's."""
        if self.language != "auto":
            return self.language
        return conversation or language_of(text) or "en"

    # -- understand ---------------------------------------------------------------------------

    def understand(self, request: UnderstandRequest) -> Understanding:
        text = heard(request.text)
        language = self._reading(text, request.language)
        scored = (
            [request.floor_flow, *request.message_flows]
            if request.floor_flow
            else request.message_flows
        )
        flows: dict[str, float] = {}
        for flow in scored:
            trigger = flow.trigger_of("message")
            if trigger is not None and trigger.phrases:
                flows[flow.id] = phrases_score(trigger.phrases, text)
        mentions: dict[str, bool] = {}
        extract: dict[str, dict[str, Any]] = {}
        for flow in request.mention_flows:
            trigger = flow.trigger_of("mention")
            assert trigger is not None
            mentions[flow.id] = phrases_score(trigger.phrases, text) >= MENTION_MIN
            if mentions[flow.id] and trigger.extract:
                extract[flow.id] = self._mention_values(
                    trigger.phrases, trigger.extract, text, request.now, language
                )
        branches = {
            question.key: phrases_score(question.when.split("|"), text) >= BRANCH_MIN
            for question in request.branches
        }
        fields = {}
        for name, definition in request.fields.items():
            value = value_for(definition, text, request.now, language, asked=False)
            if value is not None:
                fields[name] = value
        return Understanding(
            flows=flows,
            mentions=mentions,
            extract=extract,
            branches=branches,
            fields=fields,
            llm_calls=0,
            language=self.language if self.language != "auto" else language_of(text),
        )

    @staticmethod
    def _mention_values(
        phrases: Sequence[str],
        schema: Mapping[str, Any],
        text: str,
        now: datetime,
        language: str | None,
    ) -> dict[str, Any]:
        """Typed values by their recognisers; a plain string is the word after the mention."""
        words = text.split()
        folded = tokens(text)
        values: dict[str, Any] = {}
        for name, definition in schema.items():
            definition = definition if isinstance(definition, Mapping) else {"type": "string"}
            value = value_for(
                {**definition, "type": definition.get("type", "string")},
                text,
                now,
                language,
                asked=definition.get("format") is not None,
            )
            if value is None and definition.get("type", "string") == "string":
                for phrase in phrases:
                    last = tokens(phrase)[-1:] or [""]
                    if last[0] in folded:
                        position = folded.index(last[0])
                        if position + 1 < len(words):
                            value = words[position + 1].strip(".,!?")
                        break
            values[name] = value
        return values

    # -- speak --------------------------------------------------------------------------------

    def speak(self, request: SpeakRequest) -> Spoken:
        text = heard(request.text)
        language = self._replying(text, request.language)
        words = _words(language)
        talk = request.talk
        if isinstance(talk, IdleRequest):
            prompt = localized(talk.idle.get("prompt") or words["idle"], language)
            return Spoken(message=render(prompt, self._scope(request, {})), llm_calls=0)
        answering = talk.answering and bool(request.text)
        found, problem = self._heard_fields(
            request, talk, answering, self._reading(text, request.language), language
        )
        if talk.refused:
            # "Make it 6pm" at a confirmation: the change is refused out loud, and the step
            # asks again with what it had; a "yes" in the same message is no answer to a
            # question about what it no longer means ("yes, at 6pm").
            found = {}
            name, why = next(iter(talk.refused.items()))
            problem = render(
                self._problem(request.fields.get(name) or {}, language, why),
                self._scope(request, request.data),
            )
        data = {**request.data, **found}
        scope = self._scope(request, data)
        # A field on its last ask that this answer did not give is given up (the engine
        # says so): the reply goes on to what comes after the step instead of asking again.
        missing = [name for name in talk.pending if name not in found]
        asking = [name for name in missing if name not in talk.final]
        if asking:
            message = self._ask_again(request, talk, asking, problem, answering, scope, language)
        elif talk.step.collect:
            message = self._after_collect(request, data, language, gave_up=bool(missing))
        else:
            message = render(
                localized(talk.step.raw.get("prompt") or words["thanks"], language), scope
            )
        asked = _asked(talk.step, asking, request.fields)
        return Spoken(message=message, fields=found, llm_calls=0, asked=asked)

    def _heard_fields(
        self,
        request: SpeakRequest,
        talk: TalkRequest,
        answering: bool,
        reading: str | None,
        language: str,
    ) -> tuple[dict[str, Any], str]:
        """The pending fields the message gives valid values for, and what was wrong with the
        first one it answered badly that is asked again (not a field on its last try)."""
        found: dict[str, Any] = {}
        problem = ""
        if not answering:
            return found, problem
        text = heard(request.text)
        for name in talk.pending:
            if not talk.run["asked"].get(name):
                continue  # never asked: the answer is to another question, never shifted here
            ok, value = self._read_field(request, name, text, reading)
            if ok:
                found[name] = value
            elif not problem and name not in talk.final:
                problem = render(
                    self._problem(request.fields.get(name) or {}, language, value),
                    self._scope(request, request.data),
                )
        # An answer that gave one of the step's fields (now, or as the turn read it before) is
        # right: what it did not give is asked for, not corrected ("large" is the size).
        gave_another = any(
            name not in talk.pending
            and self._read_field(request, name, text, reading) == (True, request.data.get(name))
            for name in talk.step.collect
        )
        return found, "" if found or gave_another else problem

    @staticmethod
    def _read_field(
        request: SpeakRequest, name: str, text: str, reading: str | None
    ) -> tuple[bool, Any]:
        """What the answer gives the field: ``(True, value)``, or ``(False, why)``."""
        definition = request.fields.get(name) or {"type": "string"}
        raw = value_for(definition, text, request.now, reading, asked=True)
        return coerce_field(definition, raw, request.now) if raw is not None else (False, None)

    def _ask_again(
        self,
        request: SpeakRequest,
        talk: TalkRequest,
        missing: list[str],
        problem: str,
        answering: bool,
        scope: Mapping[str, Any],
        language: str,
    ) -> str:
        """Say what was wrong, the step's prompt on its first ask, then ask for what is
        missing (unless the prompt already asks a question)."""
        step = talk.step
        parts = [problem] if problem else []
        if not answering and step.raw.get("prompt") and not talk.run["asked"]:
            parts.append(render(localized(step.raw["prompt"], language), scope))
        # After a refused change the step's own question follows, so that what a "yes" then
        # confirms is on the screen.
        if not parts or not parts[-1].rstrip().endswith("?") or talk.refused:
            parts.append(
                self._ask(step, missing, request.fields, scope, language, talk.run["asked"])
            )
        return " ".join(part for part in parts if part)

    @staticmethod
    def _scope(request: SpeakRequest, data: Mapping[str, Any]) -> dict[str, Any]:
        talk = request.talk
        run_input = talk.run.get("input") if isinstance(talk, TalkRequest) else None
        return {"data": data, "context": request.context, "input": run_input}

    @staticmethod
    def _label(name: str, definition: Mapping[str, Any], language: str) -> str:
        return localized(definition.get("label") or name.replace("_", " "), language)

    def _ask(
        self,
        step: Step,
        missing: list[str],
        fields: Mapping[str, Mapping[str, Any]],
        scope: Mapping[str, Any],
        language: str,
        asked: Mapping[str, int] | None = None,
    ) -> str:
        if step.raw.get("ask"):
            return render(localized(step.raw["ask"], language), scope)
        # A field that says how to ask for it is asked for alone, as written, one at a time;
        # once asked, as its askAgain says (the first ask's "Thanks, Ana!" is not said twice).
        alone = _asked(step, missing, fields)
        if len(alone) == 1 and (fields.get(alone[0]) or {}).get("ask"):
            definition = fields[alone[0]]
            again = definition.get("askAgain") if (asked or {}).get(alone[0]) else None
            return render(localized(again or definition["ask"], language), scope)
        # Named by labels in one language: a label the conversation's language lacks makes
        # the whole question English, never "Quais são os seus size e flavour?".
        labels_of = [(fields.get(name) or {}).get("label") for name in missing]
        language = label_language(labels_of, language) or language
        words = _words(language)
        labels = [self._label(name, fields.get(name) or {}, language) for name in missing]
        if len(labels) == 1:
            return words["ask"].format(label=labels[0])
        return words["ask_many"].format(labels=", ".join(labels[:-1]) + words["and"] + labels[-1])

    @staticmethod
    def _problem(definition: Mapping[str, Any], language: str, code: str | None = None) -> str:
        """What was wrong with an answer: the field's own ``invalid`` sentence for a value
        outside its constraints, else a sentence for its kind."""
        words = _words(language)
        if code in ("out-of-range", "no-match"):
            return localized(definition.get("invalid") or words["range"], language)
        if definition.get("enum"):
            return words["enum"].format(options=", ".join(map(str, definition["enum"])))
        key = definition.get("format") or {
            "number": "number",
            "integer": "number",
            "boolean": "boolean",
        }.get(definition["type"], "sorry")
        return words.get(key, words["sorry"])

    def _after_collect(
        self, request: SpeakRequest, data: dict[str, Any], language: str, gave_up: bool = False
    ) -> str:
        """Every pending field is in. The turn's one reply should also ask what the conversation
        needs next, because a talk step reached later in this turn waits for the next message:
        walk the flow as the engine will (through ``if`` steps on built-in predicates and
        ``{step, clear}`` moves) to the next question, or stay quiet before a ``say``."""
        talk = request.talk
        assert isinstance(talk, TalkRequest)
        flow, step = talk.flow, talk.step
        target = step.raw.get("onGiveUp", step.then) if gave_up else step.then
        for _ in range(len(flow.steps) + 1):
            current = _resolve(flow, step, target, data)
            if current is None:
                break
            if current.kind == "talk":
                reply = self._talk_reply(request, current, data, language)
                if reply is not None:
                    return reply
            elif current.kind == "if":
                target = _if_target(request, current, data)
                if target is _UNJUDGED:
                    break  # a condition only the agent can judge
                step = current
                continue
            elif current.kind == "say":
                return ""  # the say step that follows is the reply
            else:
                break
            step, target = current, current.then
        # After a give-up the engine's sentence is the reply.
        return "" if gave_up else _words(language)["thanks"]

    def _talk_reply(
        self, request: SpeakRequest, step: Step, data: dict[str, Any], language: str
    ) -> str | None:
        """The question a talk step reached after the collect asks, or ``None`` when it has
        every field it collects (the walk goes on past it)."""
        scope = self._scope(request, data)
        missing = [name for name in step.collect if not is_known(data.get(name))]
        if missing:
            return self._ask(step, missing, request.fields, scope, language)
        if not step.collect:
            return render(localized(step.raw.get("prompt") or "", language), scope)
        return None


#: What ``_if_target`` answers for a condition only the agent can judge.
_UNJUDGED = object()


def _if_target(request: SpeakRequest, step: Step, data: dict[str, Any]) -> Any:
    """Where an ``if`` step on built-in predicates leads, or ``_UNJUDGED``."""
    predicate = step.raw["if"]
    if callable(predicate) or not set(predicate) <= BUILT_IN:
        return _UNJUDGED
    talk = request.talk
    assert isinstance(talk, TalkRequest)
    ctx = PredicateContext(
        context=request.context,
        data=data,
        input=talk.run.get("input"),
        run=talk.run,
        silenced=None,
        now=request.now,
    )
    return step.then if evaluate(predicate, ctx, {}) else step.raw.get("else", "end")


def _resolve(flow: Flow, step: Step, target: Any, data: dict[str, Any]) -> Step | None:
    """The step a move from ``step`` lands on (applying its ``clear`` to ``data``), or None."""
    if target is None:
        return flow.after(step)
    if isinstance(target, str):
        return None if target == "end" else flow.step(target)
    if "step" in target:
        for name in target.get("clear") or []:
            data.pop(name, None)
        return flow.step(target["step"])
    return None


def _asked(step: Step, missing: list[str], fields: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The fields a question for ``missing`` asks: all of them in the step's own ``ask`` or
    by their labels, the first that has its own ``ask`` alone."""
    if step.raw.get("ask"):
        return list(missing)
    own = [name for name in missing if (fields.get(name) or {}).get("ask")]
    return own[:1] or list(missing)
