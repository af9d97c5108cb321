"""The code half of a turn (docs/engine.md): Ingest, Decide, Run and Settle over one mutable
copy of the session. The model calls happen in ``turn.py``, between these phases; nothing here
calls a model, reads a clock or draws a random number.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .agent import ActionContext, Agent, tool_id
from .durations import parse_duration
from .fields import coerce_field, extract_mode, is_known, pending_fields
from .flows import Flow, Step, Trigger
from .isotime import iso_from_ms, ms_from_iso
from .outcomes import OUTCOME_MESSAGES
from .ports import (
    BranchQuestion,
    Deferral,
    IdleRequest,
    SpeakRequest,
    Spoken,
    TalkRequest,
    Understanding,
    UnderstandRequest,
)
from .predicates import PredicateContext, evaluate, json_equal
from .session import Run, Session, storable_text
from .templates import render, render_deep

SHORT_WAIT_MS = 10_000
MAX_STEPS_PER_TURN = 50
MAX_HOP = 5
KEEP = 50  # input ids, always-claims per flow and anchor, outcome lines per run
RETRY_LADDER_MS = (60_000, 300_000, 900_000, 3_600_000, 21_600_000)
DEFAULT_EVENT_WAIT_MS = 30 * 86_400_000
ROUTE_MIN = 40
ROUTE_STICKY = 15


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


def _next_label(target: Any) -> str | None:
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
        context: Any,
        history: Any,
        silenced: str | Mapping[str, Any] | None,
        anchors: Mapping[str, Any] | None,
        claims: Mapping[str, Any] | None,
    ) -> None:
        self.agent = agent
        self.flows = agent.flows
        self.kind = kind
        self.what = what
        self.now = now
        self.now_ms = round(now.timestamp() * 1000)
        self.now_iso = iso_from_ms(self.now_ms)
        self.context = context
        self.history_input = history
        self.anchors = anchors or {}
        self.held = (claims or {}).get("held", {})
        self.active = (claims or {}).get("active", [])
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
            self.trigger_key = what["key"]
        self.original = session
        if session is None:
            from .session import new_session

            self.session: Session = new_session(session_id)
        else:
            self.session = copy_session(session)
        self.ignored = False
        self.code: str | None = None
        self.messages: list[dict[str, Any]] = []
        self.schedule: list[dict[str, Any]] = []
        self.outcomes: list[dict[str, Any]] = []
        self.started: list[dict[str, Any]] = []
        self.ended: list[dict[str, Any]] = []
        self.retired: list[str] = []
        self.skipped: list[dict[str, Any]] = []
        self.llm_calls = 0
        self.floor_run_id: str | None = None
        self.floor_from_ingest = False
        self.ingesting = False
        self.spoke_by: set[str] = set()
        self.spoke = False
        self.after_ms = 0
        self.talk: TalkRequest | None = None
        self.speak_done = False
        self.queue: list[Run] = []

    # -- small helpers ------------------------------------------------------------------

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

    def scope(self, run: Run) -> dict[str, Any]:
        return {"data": self.session["data"], "context": self.context, "input": run.get("input")}

    def asker(self) -> Run | None:
        return next((run for run in self.runs if run["status"] == "asking"), None)

    def anchor_of(self, flow: Flow) -> str:
        if not flow.anchored:
            return self.session["id"]
        anchor = self.anchors.get(flow.anchor) or {}
        return anchor.get("key") or self.session["id"]

    def claim_at(self, key: str) -> str | None:
        claim = self.session["claims"].get(key)
        return claim["at"] if claim is not None else self.held.get(key)

    def lead_wrote_since(self, since_iso: str, flow: Flow) -> bool:
        since = ms_from_iso(since_iso)
        last_user = self.session.get("lastUserAt")
        if last_user and ms_from_iso(last_user) > since:
            return True
        if not flow.anchored:
            return False
        inbound = (self.anchors.get(flow.anchor) or {}).get("lastInboundAt")
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
        full.update({key: value for key, value in line.items() if value is not None})
        if "code" in full:
            full["message"] = OUTCOME_MESSAGES[full["code"]]
        full["at"] = self.now_iso
        self.outcomes.append(full)
        if run is not None:
            run["outcomes"].append(full)
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
    ) -> None:
        """Queue a message to the customer; it carries any inline delay waiting to ride on it."""
        message: dict[str, Any] = {"text": storable_text(text), "kind": kind}
        if media is not None:
            message["media"] = media
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

    # -- Ingest ---------------------------------------------------------------------------

    def ingest(self) -> None:
        if self.kind == "wake" and self.original is None:
            self.ignore("no-session", self.what["key"])
            return
        self.ingesting = True
        try:
            ingest = {
                "message": self._ingest_message,
                "wake": self._ingest_wake,
                "event": self._ingest_event,
                "start": self._ingest_start,
            }[self.kind]
            ingest()
        finally:
            self.ingesting = False

    def _ingest_message(self) -> None:
        message_id = self.what.get("id")
        if message_id:
            inputs = self.session["inputs"]
            if message_id in inputs:
                self.ignore("duplicate-input", message_id)
                return
            inputs.append(message_id)
            if len(inputs) > KEEP:
                del inputs[: len(inputs) - KEEP]
        self.session["lastUserAt"] = self.what["at"]
        self.resolve_reply_waits()

    def _ingest_wake(self) -> None:
        key = self.what["key"]
        if key.startswith("silence:"):
            self.silence_wake(key)
        else:
            self.run_wake(key)

    def _ingest_event(self) -> None:
        name = self.what["name"]
        direction = (self.agent.events.get(name) or {}).get("direction")
        if direction == "inbound":
            self.session["lastUserAt"] = self.now_iso
            self.resolve_reply_waits()
        elif direction == "outbound":
            self.session["lastAssistantAt"] = self.now_iso
        for run in list(self.runs):
            waiting = run.get("waiting")
            if not waiting or waiting.get("kind") != "event" or waiting.get("event") != name:
                continue
            flow = self.flows.get(run["flowId"])
            step = flow.step(run["stepId"]) if flow else None
            run["status"] = "running"
            self.unpark(run)
            if flow is None or step is None:
                continue  # move() reports the missing flow or step
            self.outcome(run, "wait", "ok", code="event-arrived", next=_next_label(step.then))
            self.follow(run, flow, step, step.then)
            self.take_floor(run)
        for flow in self.flows.values():
            for trigger in flow.triggers:
                if trigger.kind != "event" or trigger.event != name:
                    continue
                started = self.start_run(
                    flow,
                    "event",
                    self.what["key"],
                    trigger=trigger,
                    payload=self.what.get("payload"),
                    hop=self.what.get("hop", 0),
                )
                if started is not None:
                    break

    def _ingest_start(self) -> None:
        flow = self.flows.get(self.what["flow"])
        if flow is None:
            self.skip(self.what["flow"], self.session["id"], self.what["key"], "flow-gone")
            return
        self.start_run(
            flow,
            "start",
            self.what["key"],
            payload=self.what.get("input"),
            hop=self.what.get("hop", 0),
        )

    def resolve_reply_waits(self) -> None:
        """The lead wrote: every run parked on a timer wait with ``else`` takes it."""
        for run in list(self.runs):
            waiting = run.get("waiting")
            if run["status"] != "waiting" or not waiting or waiting.get("kind") != "timer":
                continue
            if run["stepId"] is None:
                continue
            flow = self.flows.get(run["flowId"])
            step = flow.step(run["stepId"]) if flow else None
            if flow is None or step is None or step.kind != "wait" or "else" not in step.raw:
                continue
            run["status"] = "running"
            self.unpark(run)
            branch = next(
                (b for b in step.raw.get("branches") or [] if self.holds(b["if"], run)), None
            )
            target = branch["then"] if branch else step.raw["else"]
            self.outcome(run, "wait", "ok", code="replied", next=_next_label(target))
            self.follow(run, flow, step, target)
            self.take_floor(run)

    def run_wake(self, key: str) -> None:
        run = next((r for r in self.runs if (r.get("waiting") or {}).get("key") == key), None)
        if run is None:
            self.ignore("stale-wake", key)
            return
        set_at = run["waiting"].get("setAt", run["startedAt"])
        run["status"] = "running"
        self.unpark(run)
        self.floor_run_id = run["id"]
        if run["stepId"] is None:
            return  # parked on its trigger's `after`: enters its first step in Run
        flow = self.flows.get(run["flowId"])
        step = flow.step(run["stepId"]) if flow else None
        if flow is None or step is None:
            return  # move() reports it
        if step.kind == "wait":
            replied = "else" in step.raw and self.lead_wrote_since(set_at, flow)
            target = step.raw["else"] if replied else step.then
            self.outcome(
                run,
                "wait",
                "ok",
                code="replied" if replied else "no-reply",
                next=_next_label(target),
            )
            self.follow(run, flow, step, target)
        elif step.kind == "wait_event":
            target = step.raw.get("else", "end")
            self.outcome(run, "wait", "ok", code="no-event", next=_next_label(target))
            self.follow(run, flow, step, target)
        # A deferred `do` or a retried talk step re-runs at the same visit: same key.

    def silence_wake(self, key: str) -> None:
        rest = key[len("silence:") :]
        flow_id = rest.split(":", 1)[0]
        ms_text = rest.rsplit(":", 1)[-1]
        flow = self.flows.get(flow_id)
        if flow is None:
            self.skip(flow_id, self.session["id"], ms_text, "flow-gone")
            return
        last_assistant = self.session.get("lastAssistantAt")
        if (
            not last_assistant
            or not ms_text.isdigit()
            or ms_from_iso(last_assistant) != int(ms_text)
            or self.lead_wrote_since(last_assistant, flow)
        ):
            self.ignore("silence-broken", key)
            return
        run = self.start_run(flow, "silence", ms_text, trigger=flow.trigger_of("silence"))
        if run is not None:
            self.floor_run_id = run["id"]

    def take_floor(self, run: Run) -> None:
        if not self.live(run) or self.floor_from_ingest:
            return
        self.floor_from_ingest = True
        self.floor_run_id = run["id"]

    # -- Starting runs ----------------------------------------------------------------------

    def start_run(
        self,
        flow: Flow,
        kind: str,
        key: str,
        *,
        trigger: Trigger | None = None,
        payload: Any = None,
        hop: int = 0,
        keep_data: bool = False,
    ) -> Run | None:
        anchor = self.anchor_of(flow)
        repeat = (
            trigger.repeat
            if trigger
            else ("once" if kind in ("message", "mention", "silence") else "always")
        )
        nonce = key if repeat == "always" else ""
        dedupe_key = f"{flow.id}:{anchor}:{nonce}"
        run: dict[str, Any] = {
            "id": f"{flow.id}#{key}",
            "flowId": flow.id,
            "anchor": anchor,
            "dedupeKey": dedupe_key,
            "stepId": None,
            "status": "running",
            "trigger": {"kind": kind, "key": key},
            "hop": hop,
            "startedAt": self.now_iso,
            "asked": {},
            "visits": {},
            "outcomes": [],
        }
        if payload is not None:
            run["trigger"]["payload"] = payload
            run["input"] = payload
        if (
            trigger is not None
            and trigger.condition is not None
            and not self.holds(trigger.condition, run)
        ):
            return None
        held_at = self.claim_at(dedupe_key)
        if held_at is not None:
            if isinstance(repeat, str):
                self.skip(flow.id, anchor, key, "already-claimed")
                return None
            if self.now_ms - ms_from_iso(held_at) < repeat:
                self.skip(flow.id, anchor, key, "cooldown")
                return None
        if hop >= MAX_HOP:
            self.skip(flow.id, anchor, key, "hop-limit")
            return None
        live = next(
            (r for r in self.runs if r["flowId"] == flow.id and r["anchor"] == anchor), None
        )
        if live is not None:
            if live["status"] == "waiting" and live["stepId"] is None:
                self.end_run(live, "replaced")
            else:
                self.skip(flow.id, anchor, key, "already-running")
                return None
        elif f"{flow.id}:{anchor}" in self.active:
            self.skip(flow.id, anchor, key, "already-running")
            return None
        claims = self.session["claims"]
        claims[dedupe_key] = {"at": self.now_iso}
        if nonce:
            self.prune_always_claims(f"{flow.id}:{anchor}:")
        if not keep_data:
            for name in flow.clear_on_start:
                self.session["data"].pop(name, None)
        self.runs.append(run)  # type: ignore[arg-type]
        self.started.append(
            {"runId": run["id"], "flowId": flow.id, "anchor": anchor, "dedupeKey": dedupe_key}
        )
        event_trigger = trigger if trigger is not None and trigger.kind == "event" else None
        after_ms = event_trigger.after_ms if event_trigger else 0
        at = self.snap(self.now_ms + after_ms, bool(event_trigger and event_trigger.business_hours))
        if (event_trigger and event_trigger.has_after) or at > self.now_ms:
            self.park(run, "timer", f"{run['id']}:start:{at}", at)  # type: ignore[arg-type]
            self.outcome(run, "wait", "waiting", code="awaiting-trigger", until=iso_from_ms(at))  # type: ignore[arg-type]
        return run  # type: ignore[return-value]

    def prune_always_claims(self, prefix: str) -> None:
        claims = self.session["claims"]
        keys = [key for key in claims if key.startswith(prefix) and len(key) > len(prefix)]
        for key in keys[: max(0, len(keys) - KEEP)]:
            del claims[key]

    def repeat_allows(self, flow: Flow, trigger: Trigger, key: str) -> bool:
        nonce = key if trigger.repeat == "always" else ""
        held_at = self.claim_at(f"{flow.id}:{self.anchor_of(flow)}:{nonce}")
        if held_at is None:
            return True
        if isinstance(trigger.repeat, str):
            return False
        return self.now_ms - ms_from_iso(held_at) >= trigger.repeat

    def draft_run(self, flow: Flow, kind: str, key: str, payload: Any = None) -> Run:
        anchor = self.anchor_of(flow)
        draft: dict[str, Any] = {
            "id": f"{flow.id}#{key}",
            "flowId": flow.id,
            "anchor": anchor,
            "dedupeKey": f"{flow.id}:{anchor}:",
            "stepId": None,
            "status": "running",
            "trigger": {"kind": kind, "key": key},
            "hop": 0,
            "startedAt": self.now_iso,
            "asked": {},
            "visits": {},
            "outcomes": [],
        }
        if payload is not None:
            draft["input"] = payload
        return draft  # type: ignore[return-value]

    # -- Understand ---------------------------------------------------------------------------

    def message_flows(self, catch_all: bool) -> list[Flow]:
        """Message flows (with phrases, or the ``[]`` catch-alls) passing ``if`` and ``repeat``."""
        out = []
        for flow in self.flows.values():
            trigger = next(
                (t for t in flow.triggers if t.kind == "message" and (not t.phrases) == catch_all),
                None,
            )
            if trigger is None:
                continue
            if trigger.condition is not None and not self.holds(
                trigger.condition, self.draft_run(flow, "message", self.trigger_key)
            ):
                continue
            if not self.repeat_allows(flow, trigger, self.trigger_key):
                continue
            out.append(flow)
        return out

    def mention_flows(self) -> list[tuple[Flow, Trigger]]:
        out = []
        for flow in self.flows.values():
            trigger = flow.trigger_of("mention")
            if trigger is not None:
                out.append((flow, trigger))
        return out

    def starts_unscored(self, eligible: list[Flow]) -> bool:
        """The lone eligible flow starts unscored when a low score would have nowhere to go."""
        return len(eligible) == 1 and self.agent.idle == "silent" and not self.message_flows(True)

    def floor_run(self) -> Run | None:
        asking = self.asker()
        if asking is not None:
            return asking
        if self.floor_run_id is None:
            return None
        return next((r for r in self.runs if r["id"] == self.floor_run_id), None)

    def understand_request(self) -> UnderstandRequest | None:
        if self.ignored or self.kind != "message":
            return None
        if self.silenced is not None and not self.understand_allowed:
            return None
        floor = self.floor_run()
        floor_flow = self.flows.get(floor["flowId"]) if floor else None
        eligible = self.message_flows(False)
        message_flows = [] if floor is None and self.starts_unscored(eligible) else eligible
        mention_flows = [
            flow
            for flow, trigger in self.mention_flows()
            if trigger.phrases and self.repeat_allows(flow, trigger, self.trigger_key)
        ]
        branches: list[BranchQuestion] = []
        asking_step = floor_flow.step(floor["stepId"]) if floor and floor_flow else None
        if floor is not None and asking_step is not None and asking_step.kind == "talk":
            for index, branch in enumerate(asking_step.raw.get("branches") or []):
                if "when" in branch:
                    branches.append(
                        BranchQuestion(floor["id"], asking_step.id, index, branch["when"])
                    )
        fields: dict[str, Mapping[str, Any]] = {}
        data = self.session["data"]
        for flow in ([floor_flow] if floor_flow else []) + eligible:
            for step in flow.steps:
                if step.kind != "talk":
                    continue
                for name in step.collect:
                    definition = self.agent.fields[name]
                    if not is_known(data.get(name)) and extract_mode(definition) == "anywhere":
                        fields[name] = definition
        if not (message_flows or mention_flows or branches or fields):
            return None
        return UnderstandRequest(
            text=self.what["text"],
            history=self.history(),
            context=self.context,
            data=data,
            now=self.now,
            floor_run=floor,
            floor_flow=floor_flow,
            message_flows=message_flows,
            mention_flows=mention_flows,
            branches=branches,
            fields=fields,
        )

    # -- Decide -------------------------------------------------------------------------------

    def decide(self, understanding: Understanding | None) -> None:
        if self.ignored or self.kind != "message":
            return
        if understanding is not None:
            self.llm_calls += understanding.llm_calls
        key = self.trigger_key
        asker = self.asker()
        route: Flow | None = None
        if not self.floor_from_ingest:
            eligible = self.message_flows(False)
            scores = understanding.flows if understanding else {}

            def best(flows: list[Flow]) -> tuple[Flow, float] | None:
                top: tuple[Flow, float] | None = None
                for flow in flows:
                    score = scores.get(flow.id, 0)
                    if top is None or score > top[1]:
                        top = (flow, score)
                return top

            if asker is not None:
                current = scores.get(asker["flowId"], 0)
                top = best([f for f in eligible if f.id != asker["flowId"]])
                if top and top[1] >= current + ROUTE_STICKY and top[1] >= ROUTE_MIN:
                    route = top[0]
            elif self.starts_unscored(eligible):
                route = eligible[0]
            else:
                top = best(eligible)
                if top and top[1] >= ROUTE_MIN:
                    route = top[0]
                else:
                    catch_alls = self.message_flows(True)
                    route = catch_alls[0] if catch_alls else None

        for flow, trigger in self.mention_flows():
            if not trigger.phrases:
                self.start_run(flow, "mention", key, trigger=trigger)
            elif understanding is not None and understanding.mentions.get(flow.id):
                self.start_run(
                    flow,
                    "mention",
                    key,
                    trigger=trigger,
                    payload=understanding.extract.get(flow.id),
                )

        if route is not None:
            suspended = next(
                (r for r in self.runs if r["flowId"] == route.id and r["status"] == "suspended"),
                None,
            )
            if suspended is not None:
                suspended["status"] = "running"
                suspended.pop("suspendedAt", None)
                self.floor_run_id = suspended["id"]
            else:
                run = self.start_run(route, "message", key, trigger=route.trigger_of("message"))
                if run is not None:
                    self.floor_run_id = run["id"]

        for name, raw in (understanding.fields if understanding else {}).items():
            self.write_field(name, raw)

        if asker is not None and self.live(asker) and asker["status"] == "asking":
            flow = self.flows.get(asker["flowId"])
            step = flow.step(asker["stepId"]) if flow else None
            if flow is not None and step is not None and step.kind == "talk":
                self.fire_branch(asker, flow, step, understanding)

    def fire_branch(
        self, run: Run, flow: Flow, step: Step, understanding: Understanding | None
    ) -> None:
        for index, branch in enumerate(step.raw.get("branches") or []):
            if "if" in branch:
                hit = not run.get("staying") and self.holds(branch["if"], run)
            else:
                key = f"{run['id']}/{step.id}/{index}"
                hit = understanding is not None and understanding.branches.get(key) is True
            if hit:
                self.outcome(
                    run,
                    step.outcome_kind,
                    "ok",
                    key=self.step_key(run, step),
                    code="branch",
                    next=_next_label(branch["then"]),
                )
                run["status"] = "running"
                self.follow(run, flow, step, branch["then"])
                return

    def write_field(self, name: str, raw: Any) -> None:
        if raw is None:
            return
        definition = self.agent.fields.get(name)
        if definition is None:
            self.outcome(None, "collect", "skipped", code="unknown-field", detail=name)
            return
        ok, value = coerce_field(definition, raw)
        if not ok:
            self.outcome(None, "collect", "skipped", code=value, detail=name)
            return
        self.session["data"][name] = value

    # -- Run ------------------------------------------------------------------------------------

    def advance(self) -> TalkRequest | IdleRequest | None:
        if self.ignored:
            return None
        self.resume_suspended()
        self.queue = list(self.runs)
        self.drain()
        return self.speaker()

    def speaker(self) -> TalkRequest | IdleRequest | None:
        if self.silenced is not None:
            return None
        talk = self.talk
        if talk is not None:
            if self.kind == "message" and any(rid != talk.run["id"] for rid in self.spoke_by):
                self.outcome(
                    talk.run,
                    talk.step.outcome_kind,
                    "skipped",  # type: ignore[arg-type]
                    key=self.step_key(talk.run, talk.step),
                    code="another-reply",
                )  # type: ignore[arg-type]
                self.talk = None
                return None
            return talk
        idle = self.agent.idle
        if (
            self.kind == "message"
            and self.asker() is None
            and idle != "silent"
            and not self.spoke_by
        ):
            return IdleRequest(idle=idle)  # type: ignore[arg-type]
        return None

    def drain(self) -> None:
        while self.queue:
            run = self.queue.pop(0)
            if self.live(run):
                self.move(run)

    def move(self, run: Run) -> None:
        if run["status"] in ("waiting", "suspended"):
            return
        if run["status"] == "asking" and self.kind != "message":
            return  # an asker re-speaks only when the lead writes
        flow = self.flows.get(run["flowId"])
        if flow is None:
            self.end_run(run, "skipped", "flow-gone")
            return
        if not self.premise_holds(run, flow):
            return
        resuming = run["status"] == "asking"
        run["status"] = "running"
        if run["stepId"] is None:
            if not flow.steps:
                self.finish_flow(run, flow)
                return
            self.enter(run, flow.steps[0].id)
        steps = 0
        while run["status"] == "running" and self.live(run):
            if steps >= MAX_STEPS_PER_TURN:
                self.end_run(run, "failed", "step-loop")
                return
            step = flow.step(run["stepId"])
            if step is None:
                self.end_run(run, "skipped", "step-gone")
                return
            self.execute(run, flow, step, resuming and steps == 0)
            steps += 1

    def premise_holds(self, run: Run, flow: Flow) -> bool:
        if (
            run["trigger"]["kind"] == "silence"
            and self.kind == "wake"
            and self.lead_wrote_since(run["startedAt"], flow)
        ):
            self.end_run(run, "skipped", "customer-replied")
            return False
        if flow.premise is not None:
            ok = self.holds(flow.premise, run)
        else:
            same = [t for t in flow.triggers if t.kind == run["trigger"]["kind"]]
            ok = not same or any(t.condition is None or self.holds(t.condition, run) for t in same)
        if not ok:
            self.end_run(run, "skipped", "premise-changed")
        return ok

    def execute(self, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
        execute = {
            "talk": self._execute_talk,
            "say": self._execute_say,
            "do": self._execute_do,
            "wait": self._execute_wait,
            "wait_event": self._execute_wait_event,
            "if": self._execute_if,
        }[step.kind]
        execute(run, flow, step, resuming)

    def _execute_talk(self, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
        key = self.step_key(run, step)
        data = self.session["data"]
        kind = step.outcome_kind
        pending: list[str] = []
        if step.collect:
            pending = pending_fields(step.collect, step.max_asks, data, run["asked"])
            if not pending and not run.get("staying"):
                self.report_max_asks(run, step)
                if resuming:
                    self.outcome(run, kind, "ok", key=key, next=_next_label(step.then))
                else:
                    self.outcome(
                        run,
                        kind,
                        "skipped",
                        key=key,
                        code="already-known",
                        next=_next_label(step.then),
                    )
                self.follow(run, flow, step, step.then)
                return
        if self.silenced is not None:
            if resuming:
                run["status"] = "asking"
            else:
                self.end_run(run, "skipped", "silenced", kind=kind, detail=self.silenced or None)
            return
        for other in self.runs:
            if other is not run and other["status"] == "asking":
                other["status"] = "suspended"
                other["suspendedAt"] = self.now_iso
        run["status"] = "asking"
        question = step.raw.get("question")
        if (
            question
            and not self.speak_done
            and pending == step.collect
            and all(run["asked"].get(name, 0) == 0 for name in pending)
        ):
            self.emit(
                render(question, self.scope(run)),
                "verbatim",
                self.message_key(run, step),
                run,
                step,
            )
            for name in pending:
                run["asked"][name] = run["asked"].get(name, 0) + 1
            self.outcome(run, kind, "ok", key=key, code="asked-fixed")
            return
        if not self.speak_done:
            self.talk = TalkRequest(run=run, flow=flow, step=step, pending=pending)

    def _execute_say(self, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
        if self.silenced is not None:
            self.end_run(run, "skipped", "silenced", kind="say", detail=self.silenced or None)
            return
        key = self.step_key(run, step)
        if step.raw.get("once"):
            claim = f"{flow.id}:{step.id}:{self.session['id']}"
            if self.claim_at(claim) is not None:
                self.outcome(
                    run, "say", "skipped", key=key, code="already-sent", next=_next_label(step.then)
                )
                self.follow(run, flow, step, step.then)
                return
            self.session["claims"][claim] = {"at": self.now_iso}
        self.emit(
            render(step.raw["say"], self.scope(run)),
            "verbatim",
            key,
            run,
            step,
            media=step.raw.get("media"),
        )
        self.outcome(run, "say", "ok", key=key, next=_next_label(step.then))
        self.follow(run, flow, step, step.then)

    def _execute_do(self, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
        key = self.step_key(run, step)
        action = self.agent.actions.get(step.raw["do"])
        params = render_deep(step.raw.get("with") or {}, self.scope(run))
        ctx = ActionContext(
            context=self.context,
            data=self.session["data"],
            input=run.get("input"),
            run=run,
            key=key,
            dedupe_key=run["dedupeKey"],
            silenced=self.silenced,
            now=self.now,
        )
        try:
            result = (
                action(params, ctx) if action else {"failed": f"unknown action {step.raw['do']!r}"}
            )
        except Exception as error:  # an action's failure is the run's outcome, never the turn's
            result = {"failed": str(error) or type(error).__name__}
        if result is None:
            result = {"ok": True}
        if "ok" in result:
            if result.get("spoke"):
                self.spoke_by.add(run["id"])
                self.spoke = True
            self.outcome(
                run, "do", "ok", key=key, detail=result.get("detail"), next=_next_label(step.then)
            )
            self.follow(run, flow, step, step.then)
        elif "skipped" in result:
            self.outcome(
                run,
                "do",
                "skipped",
                key=key,
                code="action-skipped",
                detail=str(result["skipped"]),
                next=_next_label(step.then),
            )
            self.follow(run, flow, step, step.then)
        elif "defer" in result:
            at = self.now_ms + parse_duration(result["defer"], f"action {step.raw['do']!r} defer")
            self.park(run, "timer", f"{run['id']}:{step.id}:{at}", at)
            self.outcome(
                run,
                "do",
                "deferred",
                key=key,
                code="action-deferred",
                detail=result.get("detail"),
                until=iso_from_ms(at),
            )
        else:
            target = step.raw.get("onFail", step.then)
            self.outcome(
                run,
                "do",
                "failed",
                key=key,
                code="action-failed",
                detail=str(result.get("failed", "")),
                next=_next_label(target),
            )
            self.follow(run, flow, step, target)

    def _execute_wait(self, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
        key = self.step_key(run, step)
        ms = parse_duration(step.raw["wait"])
        if ms <= SHORT_WAIT_MS:
            following = self.peek(flow, step)
            if following is not None and following.kind in ("say", "talk"):
                self.after_ms += ms
                self.outcome(
                    run,
                    "wait",
                    "ok",
                    key=key,
                    code="inline-delay",
                    detail=f"{ms}ms",
                    next=_next_label(step.then),
                )
                self.follow(run, flow, step, step.then)
                return
        at = self.snap(self.now_ms + ms, bool(step.raw.get("businessHours")))
        self.park(run, "timer", f"{run['id']}:{step.id}:{at}", at)
        self.outcome(run, "wait", "waiting", key=key, until=iso_from_ms(at))

    def _execute_wait_event(self, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
        key = self.step_key(run, step)
        wait = step.raw["wait"]
        up_to = parse_duration(wait["upTo"]) if "upTo" in wait else DEFAULT_EVENT_WAIT_MS
        at = self.now_ms + up_to
        self.park(run, "event", f"{run['id']}:{step.id}:{at}", at, event=wait["event"])
        self.outcome(
            run,
            "wait",
            "waiting",
            key=key,
            code="awaiting-event",
            detail=wait["event"],
            until=iso_from_ms(at),
        )

    def _execute_if(self, run: Run, flow: Flow, step: Step, resuming: bool) -> None:
        key = self.step_key(run, step)
        target = step.then if self.holds(step.raw["if"], run) else step.raw.get("else", "end")
        self.outcome(run, "if", "ok", key=key, next=_next_label(target))
        self.follow(run, flow, step, target)

    def peek(self, flow: Flow, step: Step) -> Step | None:
        target = step.then
        if target is None:
            return flow.after(step)
        if isinstance(target, str):
            return None if target == "end" else flow.step(target)
        return flow.step(target["step"]) if "step" in target else None

    def report_max_asks(self, run: Run, step: Step) -> None:
        data = self.session["data"]
        for name in step.collect:
            if not is_known(data.get(name)) and run["asked"].get(name, 0) >= step.max_asks:
                self.outcome(
                    run,
                    "collect",
                    "skipped",
                    key=self.step_key(run, step),
                    code="max-asks",
                    detail=name,
                )

    # -- Movement primitives ---------------------------------------------------------------

    def follow(self, run: Run, flow: Flow, step: Step, target: Any) -> None:
        if target is None:
            following = flow.after(step)
            if following is not None:
                self.enter(run, following.id)
            else:
                self.finish_flow(run, flow)
        elif isinstance(target, str):
            if target == "end":
                self.finish_flow(run, flow)
            else:
                self.jump(run, flow, target)
        elif "step" in target:
            for name in target.get("clear") or []:
                self.session["data"].pop(name, None)
                run["asked"].pop(name, None)
            self.jump(run, flow, target["step"])
        else:
            child_id = render(target["flow"], self.scope(run))
            key = self.step_key(run, step)
            self.end_run(run, "flow")
            self.chain(child_id, key, target.get("input", run.get("input")), run["hop"] + 1)

    def chain(
        self, flow_id: str, key: str, payload: Any, hop: int, keep_data: bool = False
    ) -> None:
        child = self.flows.get(flow_id)
        if child is None:
            self.skip(flow_id, self.session["id"], key, "flow-gone")
            return
        run = self.start_run(child, "flow", key, payload=payload, hop=hop, keep_data=keep_data)
        if run is None:
            return
        self.floor_run_id = run["id"]
        if self.ingesting:
            self.floor_from_ingest = True
        self.queue.append(run)

    def jump(self, run: Run, flow: Flow, step_id: str) -> None:
        if flow.step(step_id) is not None:
            self.enter(run, step_id)
        else:
            self.end_run(run, "skipped", "step-gone")

    @staticmethod
    def enter(run: Run, step_id: str) -> None:
        run["stepId"] = step_id
        run["visits"][step_id] = run["visits"].get(step_id, 0) + 1
        run["status"] = "running"
        run.pop("waiting", None)
        run.pop("staying", None)

    def stay_at(self, run: Run, step: Step) -> None:
        self.enter(run, step.id)
        run["staying"] = True
        run["status"] = "asking"

    def stay_step(self, run: Run, flow: Flow) -> Step | None:
        for line in reversed(run["outcomes"]):
            if line["kind"] in ("prompt", "collect"):
                step = flow.step(line.get("stepId"))
                if step is not None and step.kind == "talk":
                    return step
        return next((step for step in reversed(flow.steps) if step.kind == "talk"), None)

    def finish_flow(self, run: Run, flow: Flow) -> None:
        stay = self.stay_step(run, flow) if flow.on_end == "stay" else None
        if stay is not None:
            other = next((r for r in self.runs if r is not run and r["status"] == "asking"), None)
            self.stay_at(run, stay)
            unanswered = (
                self.kind == "message"
                and self.silenced is None
                and not self.speak_done
                and not self.spoke_by
            )
            if unanswered and (other is None or self.floor_run_id == run["id"]):
                run["status"] = "running"
            elif other is not None:
                run["status"] = "suspended"
                run["suspendedAt"] = self.now_iso
            return
        if flow.on_end == "reset" and flow.steps:
            key = self.step_key(run, flow.steps[-1])
            self.end_run(run, "reset")
            self.chain(flow.id, key, run.get("input"), run["hop"] + 1, keep_data=True)
            return
        self.end_run(run, "end")

    def end_run(
        self,
        run: Run,
        reason: str,
        code: str | None = None,
        *,
        kind: str | None = None,
        detail: str | None = None,
    ) -> None:
        runs = self.runs
        for index, candidate in enumerate(runs):
            if candidate is run:
                del runs[index]
                break
        if code is not None:
            flow = self.flows.get(run["flowId"])
            step = flow.step(run["stepId"]) if flow else None
            self.outcome(
                run,
                kind or (step.outcome_kind if step else "if"),
                "failed" if reason == "failed" else "skipped",
                code=code,
                detail=detail,
            )
        self.ended.append({**run, "reason": reason})
        self.unpark(run)
        if self.talk is not None and self.talk.run is run:
            self.talk = None

    def unpark(self, run: Run) -> None:
        """The run no longer waits: unless its own wake woke it, that wake is retired (it
        would only fire as a stale wake)."""
        waiting = run.pop("waiting", None)
        key = (waiting or {}).get("key")
        if key and not (self.kind == "wake" and key == self.what["key"]):
            self.retired.append(key)

    def park(self, run: Run, kind: str, key: str, at_ms: int, event: str | None = None) -> None:
        run["status"] = "waiting"
        waiting: dict[str, Any] = {"kind": kind, "key": key}
        if event is not None:
            waiting["event"] = event
        waiting.update(until=iso_from_ms(at_ms), setAt=self.now_iso)
        run["waiting"] = waiting  # type: ignore[typeddict-item]
        self.schedule.append({"key": key, "at": iso_from_ms(at_ms)})

    def resume_suspended(self) -> None:
        if self.asker() is not None:
            return
        chosen: Run | None = None
        for run in self.runs:
            if run["status"] != "suspended":
                continue
            if chosen is None or (run.get("suspendedAt") or run["startedAt"]) >= (
                chosen.get("suspendedAt") or chosen["startedAt"]
            ):
                chosen = run
        if chosen is not None:
            chosen["status"] = "asking"
            chosen.pop("suspendedAt", None)

    # -- Settle ---------------------------------------------------------------------------------

    def speak_request(self, talk: TalkRequest | IdleRequest) -> SpeakRequest:
        agent = self.agent
        if isinstance(talk, IdleRequest):
            own_instructions = list(talk.idle.get("instructions") or [])
            allowed = talk.idle.get("tools")
            run = None
        else:
            own_instructions = [
                *(talk.flow.raw.get("instructions") or []),
                *(talk.step.raw.get("instructions") or []),
            ]
            allowed = talk.step.raw.get("tools", talk.flow.raw.get("tools"))
            run = talk.run
        instructions = [
            item
            for item in [*agent.instructions, *own_instructions]
            if not (isinstance(item, Mapping) and "if" in item) or self.holds(item["if"], run)
        ]
        tools = [tool for tool in agent.tools if allowed is None or tool_id(tool) in allowed]
        return SpeakRequest(
            talk=talk,
            input_kind=self.kind,
            text=self.what.get("text") if self.kind == "message" else None,
            context=self.context,
            data=self.session["data"],
            history=self.history(),
            now=self.now,
            instructions=instructions,
            tools=tools,
            fields=agent.fields,
        )

    def settle(self, outcome: Spoken | Deferral | None) -> None:
        if self.ignored:
            return
        self.speak_done = True
        talk = self.talk
        self.talk = None
        if isinstance(outcome, Deferral):
            self.llm_calls += outcome.llm_calls
            if talk is not None:
                self.defer_talk(talk, outcome)
            else:
                self.outcome(
                    None, "idle", "deferred", code=outcome.code, llmCalls=outcome.llm_calls
                )
        elif isinstance(outcome, Spoken):
            self.llm_calls += outcome.llm_calls
            if talk is not None:
                self.apply_spoken(talk, outcome)
                self.drain()
            else:
                key = f"idle:{self.trigger_key}"
                if outcome.message:
                    self.emit(outcome.message, "ai", key)
                self.session["data"].update(outcome.data)
                self.outcome(None, "idle", "ok", key=key, llmCalls=outcome.llm_calls)
        if self.spoke:
            self.session["lastAssistantAt"] = self.now_iso
        self.resume_suspended()
        self.arm_silence()

    def apply_spoken(self, talk: TalkRequest, spoken: Spoken) -> None:
        run, flow, step = talk.run, talk.flow, talk.step
        key = self.step_key(run, step)  # type: ignore[arg-type]
        if spoken.message:
            self.emit(spoken.message, "ai", self.message_key(run, step), run, step)  # type: ignore[arg-type]
        for name, raw in spoken.fields.items():
            self.write_field(name, raw)
        self.session["data"].update(spoken.data)
        self.outcome(
            run,
            step.outcome_kind,
            "ok",
            step_id=step.id,
            key=key,  # type: ignore[arg-type]
            llmCalls=spoken.llm_calls,
        )
        if not self.live(run):  # type: ignore[arg-type]
            return
        if step.collect:
            pending = pending_fields(
                step.collect, step.max_asks, self.session["data"], run["asked"]
            )
            if pending:
                for name in pending:
                    run["asked"][name] = run["asked"].get(name, 0) + 1  # type: ignore[index]
                run["status"] = "asking"  # type: ignore[index]
                return
            if not run.get("staying"):
                self.report_max_asks(run, step)  # type: ignore[arg-type]
        if run.get("staying"):
            self.stay_at(run, step)  # type: ignore[arg-type]
            return
        run["status"] = "running"  # type: ignore[index]
        self.follow(run, flow, step, step.then)  # type: ignore[arg-type]
        if self.live(run) and run["status"] == "running":  # type: ignore[arg-type]
            self.queue.append(run)  # type: ignore[arg-type]

    def defer_talk(self, talk: TalkRequest, deferred: Deferral) -> None:
        run, step = talk.run, talk.step
        key = self.step_key(run, step)  # type: ignore[arg-type]
        attempt = 0
        for line in reversed(run["outcomes"]):
            if line["status"] != "deferred" or line.get("stepId") != step.id:
                break
            attempt += 1
        retryable = deferred.retryable
        if self.agent.should_retry is not None:
            retryable = bool(self.agent.should_retry(deferred))
        if not retryable or attempt >= len(RETRY_LADDER_MS):
            self.outcome(run, step.outcome_kind, "failed", key=key, code=deferred.code)  # type: ignore[arg-type]
            self.end_run(run, "failed")  # type: ignore[arg-type]
            return
        at = self.now_ms + RETRY_LADDER_MS[attempt]
        if deferred.reset_at_ms is not None and deferred.reset_at_ms > at:
            at = deferred.reset_at_ms
        visit = run["visits"].get(step.id, 0)
        self.park(run, "timer", f"{run['id']}:{step.id}:{visit}:retry:{at}", at)  # type: ignore[arg-type]
        self.outcome(
            run,
            step.outcome_kind,
            "deferred",
            key=key,
            code=deferred.code,  # type: ignore[arg-type]
            until=iso_from_ms(at),
        )

    def arm_silence(self) -> None:
        """Time the silence after the assistant spoke (spec: only when it spoke this turn).
        The silence timed before is retired once it cannot fire: the user wrote, or the
        assistant spoke again and the flow was not re-armed (its ``if`` no longer holds)."""
        previous = self.original.get("lastAssistantAt") if self.original else None
        spoke = self.session.get("lastAssistantAt") != previous
        wakes = self.silence_wakes(previous) if spoke else []
        self.schedule.extend(wakes)
        wrote = self.session.get("lastUserAt") != (self.original or {}).get("lastUserAt")
        if not previous or not (spoke or wrote):
            return
        kept = {wake.get("replaces") for wake in wakes}
        if self.kind == "wake":
            kept.add(self.what["key"])  # the host marks the fired wake itself
        at_ms = ms_from_iso(previous)
        self.retired += [
            key
            for flow in self.flows.values()
            if flow.trigger_of("silence") is not None
            and (key := f"silence:{flow.id}:{self.session['id']}:{at_ms}") not in kept
        ]

    def silence_wakes(self, previous: str | None = None) -> list[dict[str, Any]]:
        session = self.session
        last_assistant = session.get("lastAssistantAt")
        if not last_assistant:
            return []
        last_user = session.get("lastUserAt")
        if last_user and ms_from_iso(last_user) > ms_from_iso(last_assistant):
            return []
        ms = ms_from_iso(last_assistant)
        wakes = []
        for flow in self.flows.values():
            trigger = flow.trigger_of("silence")
            if trigger is None:
                continue
            key = str(ms)
            if trigger.condition is not None and not self.holds(
                trigger.condition, self.draft_run(flow, "silence", key)
            ):
                continue
            if not self.repeat_allows(flow, trigger, key):
                continue
            at = self.snap(ms + trigger.silence_ms, trigger.business_hours)
            wake: dict[str, Any] = {
                "key": f"silence:{flow.id}:{session['id']}:{ms}",
                "at": iso_from_ms(at),
            }
            if previous:
                wake["replaces"] = f"silence:{flow.id}:{session['id']}:{ms_from_iso(previous)}"
            wakes.append(wake)
        return wakes

    def changed(self) -> bool:
        if self.ignored:
            return False
        return (
            self.original is None
            or bool(self.messages or self.schedule or self.outcomes or self.skipped)
            or not json_equal(self.session, self.original)  # the costly test, last
        )
