"""What of a turn is redacted before it is stored (``REDACT``, docs/privacy.md): the session's
free text, redacted once (what the store holds was redacted when stored), and which values
the model picked out are kept. The host calls it between the turn and the commit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from ..engine import Agent, Session, TurnResult
from ..engine.session import Run
from ..redaction import redact_value, redaction_fingerprint, redactor

Turn = TypeVar("Turn", bound=TurnResult)

#: The session metadata key naming the ``REDACT`` its stored text was redacted with.
REDACTED_WITH = "redactedWith"


def redacted_for_storage(hosted: Turn, agent: Agent, loaded: Session | None) -> Turn:
    """``hosted`` with its session as it is stored: with ``REDACT`` set, the session's free
    text (history, runs' inputs and triggers' payloads, outcomes) redacted. The data a flow
    asked for stays as collected (a run live before or after the turn, or one it ended,
    collects it, or it was kept before). A value nobody asked for (an e-mail the model picked out of
    a message while no booking ran) in which redaction finds personal data is not kept:
    kept as "[email]" a flow would take it as known; gone, the flow asks for it when it
    needs it. The turn's messages reach the client as said; what is logged and queued of
    them is redacted (``turn_records``). Only fields the agent declares (what the model
    extracts into) are held to that; a value its actions set is theirs to keep."""
    if redactor() is None:
        return hosted
    # What the store holds was redacted when stored, with the REDACT its metadata names: a
    # turn redacts only what it adds, unless REDACT has changed since (or was off).
    fingerprint = redaction_fingerprint()
    redacted = loaded is not None and loaded["metadata"].get(REDACTED_WITH) == fingerprint
    stored = loaded if redacted else None
    stored_runs = {run["id"]: run for run in stored["runs"]} if stored is not None else {}
    runs = [_redacted_run(run, stored_runs.get(run["id"])) for run in hosted.session["runs"]]
    session: Session = {
        **hosted.session,
        "runs": runs,
        "metadata": {**hosted.session["metadata"], REDACTED_WITH: fingerprint},
    }
    if "history" in session:
        stored_history = stored.get("history", []) if stored is not None else []
        session["history"] = _new_ones_redacted(session["history"], stored_history)
    runs_of_the_turn: list[Mapping[str, Any]] = [
        *session["runs"],
        *hosted.ended,
        *(loaded["runs"] if loaded is not None else []),
    ]
    session["data"] = _kept_data(
        session["data"], agent, runs_of_the_turn, stored["data"] if stored is not None else {}
    )
    hosted.session = session
    return hosted


def _kept_data(
    data: dict[str, Any], agent: Agent, runs: list[Mapping[str, Any]], before: Mapping[str, Any]
) -> dict[str, Any]:
    """``data`` less the values of declared fields that no run of the turn collects, that
    were not kept before, and in which redaction finds personal data (see ``kept``)."""
    asked = agent.fields_asked(runs)
    return {
        name: value
        for name, value in data.items()
        if name not in agent.fields  # set by the agent's own code (an action), not extracted
        or name in asked
        or before.get(name) == value
        or redact_value(value) == value
    }


def _new_ones_redacted(entries: list[Any], stored: list[Any]) -> list[Any]:
    """``entries`` with those the store keeps already (redacted when they were stored) as
    they are, and the rest redacted: a turn appends a few lines to a long list (and drops
    its oldest), so the stored lines are looked for as one run ending with the last stored
    one, and one by one only when they are not that."""
    known = _stored_run_length(entries, stored)
    if known:
        return entries[:known] + [redact_value(entry) for entry in entries[known:]]
    return [entry if entry in stored else redact_value(entry) for entry in entries]


def _stored_run_length(entries: list[Any], stored: list[Any]) -> int:
    """How many of ``entries``' first lines are the stored list's last ones, in order."""
    if not stored:
        return 0
    for end in range(len(entries), 0, -1):
        if entries[end - 1] == stored[-1]:
            return end if end <= len(stored) and entries[:end] == stored[-end:] else 0
    return 0


def _redacted_run(run: Run, stored: Run | None) -> Run:
    outcomes = _new_ones_redacted(run["outcomes"], stored["outcomes"] if stored else [])
    kept_run: dict[str, Any] = {**run, "outcomes": outcomes}
    if "input" in run:
        kept_run["input"] = redact_value(run["input"])
    if "payload" in run["trigger"]:
        kept_run["trigger"] = {**run["trigger"], "payload": redact_value(run["trigger"]["payload"])}
    return kept_run  # type: ignore[return-value]
