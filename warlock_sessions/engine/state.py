"""The turn's mutable record: the working copy of the session, what the turn read once at its
start, and everything its result will carry. The phase modules (``ingest``, ``decide``,
``steps``, ``settle``, with ``lifecycle`` beneath them) hold the behaviour and change this record;
it only answers questions about itself and records lines and messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from .agent import Agent
from .flows import Flow, Step
from .isotime import iso_from_ms, ms_from_iso
from .outcomes import OUTCOME_MESSAGES
from .ports import (
    TalkRequest,
)
from .predicates import PredicateContext, evaluate, json_equal
from .session import Run, Session, StepOutcome, new_session, plain_json, storable_text
from .templates import Text, localized, render

KEEP = 50  # input ids, always-claims per flow and anchor, outcome lines per run


def copy_session(session: Mapping[str, Any]) -> Session:
    """A copy the turn may change freely, without touching the caller's blob.

    Cheaper than a deep copy of the whole blob: outcome lines, claims and triggers are never
    changed once written, so only the containers the engine mutates are copied; the parts that
    hold callers' values (data, metadata, history, inputs of runs) are copied deeply.
    """
    copied: dict[str, Any] = dict(session)
    copied["data"] = _deep(session["data"])
    copied["metadata"] = _deep(session["metadata"])
    if "history" in session:
        copied["history"] = _deep(session["history"])
    copied["claims"] = dict(session["claims"])
    copied["inputs"] = list(session["inputs"])
    runs = []
    for run in session["runs"]:
        run_copy = dict(run)
        run_copy["asked"] = dict(run["asked"])
        run_copy["visits"] = dict(run["visits"])
        run_copy["outcomes"] = list(run["outcomes"])
        if "waiting" in run:
            run_copy["waiting"] = dict(run["waiting"])
        if "input" in run:
            run_copy["input"] = _deep(run["input"])
        run_copy["trigger"] = _deep(run["trigger"])
        runs.append(run_copy)
    copied["runs"] = runs
    return copied  # type: ignore[return-value]


def _deep(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _deep(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_deep(item) for item in value]
    return value


def ignored_line(code: str, key: str, at: str) -> dict[str, Any]:
    """The one outcome line of an ignored input."""
    return {
        "kind": "wait",
        "status": "skipped",
        "code": code,
        "message": OUTCOME_MESSAGES[code],
        "key": key,
        "at": at,
    }


def next_label(target: Any) -> str | None:
    """The ``next`` column of an outcome line: a step id, ``end``, or ``flow:<id>``."""
    if target is None:
        return None
    if isinstance(target, str):
        return target
    return target["step"] if "step" in target else f"flow:{target['flow']}"


class TurnState:
    """One turn in progress: the working session copy and everything the result will carry."""

    def __init__(
        self,
        agent: Agent,
        *,
        session_id: str,
        session: Session | None,
        kind: str,
        what: dict[str, Any],
        now: datetime,
        context: Any = None,
        history: Any = None,
        silenced: str | Mapping[str, Any] | None = None,
        anchors: Mapping[str, Any] | None = None,
        claims: Mapping[str, Any] | None = None,
    ) -> None:
        # What the turn reads and never changes.
        self.agent = agent
        self.flows = agent.flows
        self.kind = kind  # "message", "wake", "event", "start" or "handover"
        self.what = what  # the input itself, checked by check_input
        self.now = now  # the clock, read once: the whole turn happens at one instant
        self.now_ms = round(now.timestamp() * 1000)
        self.now_iso = iso_from_ms(self.now_ms)
        self.context = context  # the host's per-conversation context, seen by predicates
        self.history_input = history  # history passed by the host, else the blob's own
        self.anchors = anchors or {}  # anchor name -> {"key", "lastInboundAt"}
        self.held = (claims or {}).get("held", {})  # claims held outside this session
        self.active = (claims or {}).get("active", [])  # "flow:anchor" running elsewhere
        # A silenced conversation says nothing; ``understand`` lets the model still read it.
        if isinstance(silenced, Mapping):
            self.silenced: str | None = silenced.get("reason", "")
            self.understand_allowed = silenced.get("understand") is True
        else:
            self.silenced = silenced
            self.understand_allowed = False
        if kind == "message":
            what.setdefault("at", self.now_iso)
            self.trigger_key: str = what.get("id") or what["at"]
        else:
            self.trigger_key = what["key"]  # keys every run this input starts
        self.original = session  # the stored blob (None on a first turn), never changed
        self.session: Session = (
            new_session(session_id) if session is None else copy_session(session)
        )
        # What the result carries.
        self.ignored = False  # the input changes nothing (duplicate, stale wake, ...)
        self.code: str | None = None  # why it was ignored
        self.messages: list[dict[str, Any]] = []  # to send, in order, each with its key
        self.schedule: list[dict[str, Any]] = []  # wakes to set: {"key", "at"}
        self.retired: list[str] = []  # wake keys no longer wanted
        self.outcomes: list[dict[str, Any]] = []  # every outcome line of this turn
        self.started: list[dict[str, Any]] = []  # runs started, with their claims
        self.ended: list[dict[str, Any]] = []  # runs ended, with the reason
        self.skipped: list[dict[str, Any]] = []  # runs refused a start, with the code
        self.refused: dict[str, str] = {}  # fields the message gave values they refused
        self.llm_calls = 0
        # Who holds the floor: the run the lead's message is about.
        self.floor_run_id: str | None = None
        self.floor_from_ingest = False  # ingest chose it (a reply, an event); routing keeps it
        self.interrupted = False  # the user left the floor flow by one of its interrupts
        # People have the session (engine.handover): the bot says nothing more this turn.
        self.with_people = False
        self.handed_back = False  # staff handed it back this turn: the asker asks again
        self.ingesting = False  # runs chained during ingest take the floor too
        # Speaking: at most one model-spoken talk per turn, after every verbatim message.
        self.spoke_by: set[str] = set()  # runs that said something this turn
        self.spoke = False  # anything was said (sets lastAssistantAt)
        self.after_ms = 0  # an inline delay waiting to ride on the next message
        self.talk: TalkRequest | None = None  # the talk step the model will speak for
        self.speak_done = False  # the model has spoken; later talk steps wait for next turn
        self.queue: list[Run] = []  # runs to move in the steps phase, in order

    @property
    def runs(self) -> list[Run]:
        return self.session["runs"]

    def live(self, run: Run) -> bool:
        return any(r is run for r in self.runs)

    def history(self) -> Any:
        if self.history_input is not None:
            return self.history_input
        return self.session.get("history", [])

    def holds(self, predicate: Any, run: Run | None) -> bool:
        ctx = PredicateContext(
            context=self.context,
            data=self.session["data"],
            input=run.get("input") if run is not None else None,
            run=run,
            silenced=self.silenced,
            now=self.now,
            runs=tuple(self.runs),
        )
        return evaluate(predicate, ctx, self.agent.conditions)

    def scope(self, run: Run | None) -> dict[str, Any]:
        given = run.get("input") if run is not None else None
        return {"data": self.session["data"], "context": self.context, "input": given}

    def render(self, template: Text, run: Run | None, kind: str) -> str:
        """``template`` (in the conversation's language, when it has several) as the user
        reads it; a placeholder left out is logged on the run."""

        def unresolved(path: str) -> None:
            self.outcome(run, kind, "ok", code="unresolved-placeholder", detail=path)

        return render(localized(template, self.language), self.scope(run), unresolved=unresolved)

    def pinned_language(self) -> str | None:
        """The language the host's context (``{"language": "pt"}``) or the floor flow
        (``"language": "pt"``) sets, which no message changes."""
        if isinstance(self.context, Mapping) and isinstance(self.context.get("language"), str):
            return str(self.context["language"])
        floor = self.floor_run()
        flow = self.flows.get(floor["flowId"]) if floor else None
        pinned = flow.raw.get("language") if flow else None
        return pinned if isinstance(pinned, str) else None

    @property
    def language(self) -> str | None:
        """The conversation's language: pinned, else as the messages so far showed it."""
        kept = self.session["metadata"].get("language")
        return self.pinned_language() or (kept if isinstance(kept, str) else None)

    def asker(self) -> Run | None:
        return next((run for run in self.runs if run["status"] == "asking"), None)

    def anchor_of(self, flow: Flow) -> str:
        return self.anchor_record(flow).get("key") or self.session["id"]

    def anchor_record(self, flow: Flow) -> Mapping[str, Any]:
        """What the host told the turn about ``flow``'s anchor (its key, when the lead last
        wrote there); nothing for a flow anchored to the session."""
        if not flow.anchored or flow.anchor is None:
            return {}
        return self.anchors.get(flow.anchor) or {}

    def claim_at(self, key: str) -> str | None:
        claim = self.session["claims"].get(key)
        return claim["at"] if claim is not None else self.held.get(key)

    def lead_wrote_since(self, since_iso: str, flow: Flow) -> bool:
        since = ms_from_iso(since_iso)
        last_user = self.session.get("lastUserAt")
        if last_user and ms_from_iso(last_user) > since:
            return True
        inbound = self.anchor_record(flow).get("lastInboundAt")
        return inbound is not None and ms_from_iso(inbound) > since

    def snap(self, at_ms: int, business_hours: bool) -> int:
        hook = self.agent.business_hours
        if not (business_hours and hook):
            return at_ms
        snapped = hook(datetime.fromtimestamp(at_ms / 1000, tz=self.now.tzinfo), self.context)
        return round(snapped.timestamp() * 1000)

    def step_key(self, run: Run, step: Step) -> str:
        return f"{run['id']}:{step.id}:{run['visits'].get(step.id, 0)}"

    def message_key(self, run: Run, step: Step) -> str:
        """The key of what a talk step says: its step key, suffixed once the step has asked
        within the visit with how many asks it has made. A step that asks again at the same visit
        says something new each turn (every ask counts, so the suffix only grows), and the
        outbox keeps one message per key, so the re-ask must not share the first one's key."""
        asked = sum(run["asked"].get(name, 0) for name in step.collect)
        key = self.step_key(run, step)
        return f"{key}.{asked}" if asked else key

    def outcome(
        self, run: Run | None, kind: str, status: str, *, step_id: str | None = None, **line: Any
    ) -> None:
        full: dict[str, Any] = {}
        if run is not None:
            full["runId"] = run["id"]
            full["flowId"] = run["flowId"]
            current = step_id if step_id is not None else run["stepId"]
            if current is not None:
                full["stepId"] = current
        full["kind"] = kind
        full["status"] = status
        full.update({key: plain_json(value) for key, value in line.items() if value is not None})
        if "code" in full:
            full["message"] = OUTCOME_MESSAGES[full["code"]]
        full["at"] = self.now_iso
        self.outcomes.append(full)
        if run is not None:
            run["outcomes"].append(cast(StepOutcome, full))
            if len(run["outcomes"]) > KEEP:
                del run["outcomes"][: len(run["outcomes"]) - KEEP]

    def emit(
        self,
        text: str,
        kind: str,
        key: str,
        run: Run | None = None,
        step: Step | None = None,
        media: Any = None,
        by: str | None = None,
    ) -> None:
        """Queue a message to the customer; it carries any inline delay waiting to ride on it.
        ``by``: the person who wrote it, for a message staff sent in the bot's place."""
        message: dict[str, Any] = {"text": storable_text(text), "kind": kind}
        if media is not None:
            message["media"] = media
        if by is not None:
            message["by"] = by
        message["afterMs"] = self.after_ms
        message["key"] = key
        if run is not None and step is not None:
            message["runId"] = run["id"]
            message["stepId"] = step.id
            self.spoke_by.add(run["id"])
        self.messages.append(message)
        self.after_ms = 0
        self.spoke = True

    def ignore(self, code: str, key: str) -> None:
        self.ignored = True
        self.code = code
        self.outcomes.append(ignored_line(code, key, self.now_iso))

    def skip(self, flow_id: str, anchor: str, trigger_key: str, code: str) -> None:
        self.skipped.append(
            {
                "flowId": flow_id,
                "anchor": anchor,
                "triggerKey": trigger_key,
                "code": code,
                "message": OUTCOME_MESSAGES[code],
            }
        )

    def floor_run(self) -> Run | None:
        asking = self.asker()
        if asking is not None:
            return asking
        if self.floor_run_id is None:
            return None
        return next((r for r in self.runs if r["id"] == self.floor_run_id), None)

    def changed(self) -> bool:
        if self.ignored:
            return False
        return (
            self.original is None
            or bool(self.messages or self.schedule or self.outcomes or self.skipped)
            or not json_equal(self.session, self.original)  # the costly test, last
        )
