"""``Dialogue``: a conversation with an agent in a test, as a person would have it.

Say a message, move the clock, fire the wakes that fell due, and read the replies and the
data, against any agent and any store (a ``MemoryStore`` unless given one). Each input is
the host's loop without its delivery: load, ``turn``, save with the version check, keep
the wakes. Pure Python, like the engine: no Django needed unless the store is a Django one.

    dialogue = Dialogue(booking_agent())
    assert dialogue.say("book") == ["Great, let's get you booked. What's your name?"]
    dialogue.say("Ana")
    dialogue.advance("2m")          # fires the reminder that fell due
    assert dialogue.data["name"] == "Ana"
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..engine.agent import Agent
from ..engine.fakes import FakeClock, MemoryScheduler
from ..engine.ports import Model
from ..engine.session import Run, Session
from ..engine.turn import TurnResult, turn
from ..stores.base import Store
from ..stores.memory import MemoryStore


@dataclass(frozen=True)
class Said:
    """One line of the transcript: ``who`` is ``"user"`` or ``"bot"``."""

    who: str
    text: str
    at: str


class Dialogue:
    """One conversation (``session_id``) with ``agent``, on a clock that moves only when told
    (and by ``pace`` before each message).

    Every method that applies an input returns the texts the bot sent in reply, in order;
    ``transcript`` keeps both sides, and ``last`` is the last turn's ``TurnResult``.
    """

    def __init__(
        self,
        agent: Agent,
        store: Store | None = None,
        *,
        session_id: str = "dialogue",
        clock: FakeClock | None = None,
        context: Any = None,
        model: Model | None = None,
        pace: str | int = "1s",
    ) -> None:
        self.agent = agent
        self.store = store if store is not None else MemoryStore()
        self.session_id = session_id
        self.clock = clock or FakeClock()
        self.context = context
        self.model = model
        self.pace = pace
        self.wakes = MemoryScheduler()
        self.transcript: list[Said] = []
        self.last: TurnResult | None = None
        self._numbers = itertools.count(1)

    def say(self, text: str, **message: Any) -> list[str]:
        """The user writes ``text`` (``message`` may add an ``id`` or other message fields),
        ``pace`` after the previous input: people take a moment to type, and a message at the
        very instant of the reply before it is not how conversations go. Wakes that fall due
        in that moment are not fired: ``advance`` fires them."""
        self.clock.advance(self.pace)
        self.transcript.append(Said("user", text, self.clock.iso))
        return self.send(message={"text": text, "id": f"m{next(self._numbers)}", **message})

    def event(self, name: str, payload: Any = None, key: str | None = None) -> list[str]:
        """An outside event (``key`` defaults to one unique to this dialogue)."""
        event: dict[str, Any] = {"name": name, "key": key or f"{name}:{next(self._numbers)}"}
        if payload is not None:
            event["payload"] = payload
        return self.send(event=event)

    def start(self, flow: str, input: Any = None, key: str | None = None) -> list[str]:
        """Start ``flow`` from outside, as ``Host.handle(..., {"start": ...})`` does."""
        start: dict[str, Any] = {"flow": flow, "key": key or f"{flow}:{next(self._numbers)}"}
        if input is not None:
            start["input"] = input
        return self.send(start=start)

    def advance(self, by: str | int) -> list[str]:
        """Move the clock by a duration (``"2m"``) or milliseconds, then fire what fell due."""
        self.clock.advance(by)
        return self.fire_due()

    def fire_due(self) -> list[str]:
        """Fire every wake due now, earliest first, as the worker would."""
        replies: list[str] = []
        for entry in self.wakes.due(self.clock.now()):
            replies.extend(self.send(wake=entry["key"]))
        return replies

    def send(self, **input: Any) -> list[str]:
        """Apply one raw input (``message=``, ``wake=``, ``event=`` or ``start=``): load, turn,
        save, keep the wakes, and return the reply texts."""
        loaded = self.store.load(self.session_id)
        result = turn(
            agent=self.agent,
            session_id=self.session_id,
            session=loaded,
            clock=self.clock,
            context=self.context,
            model=self.model,
            **input,
        )
        if result.changed:
            self.store.save(result.session, loaded["version"] if loaded else 0)
        self.wakes.add(result.schedule)
        self.wakes.drop(result.retired)
        self.last = result
        replies = [message["text"] for message in result.messages]
        self.transcript.extend(Said("bot", text, self.clock.iso) for text in replies)
        return replies

    @property
    def session(self) -> Session | None:
        """The session as stored now (``None`` before the first turn)."""
        return self.store.load(self.session_id)

    @property
    def data(self) -> dict[str, Any]:
        """The session's collected data."""
        session = self.session
        return dict(session["data"]) if session else {}

    @property
    def runs(self) -> list[Run]:
        """The live runs."""
        session = self.session
        return list(session["runs"]) if session else []

    def step_of(self, flow: str) -> str | None:
        """The step a live run of ``flow`` is at (``None`` when no run of it is live)."""
        return next((run["stepId"] for run in self.runs if run["flowId"] == flow), None)

    @property
    def replies(self) -> list[str]:
        """Everything the bot has said, in order."""
        return [line.text for line in self.transcript if line.who == "bot"]

    @property
    def codes(self) -> list[str]:
        """The outcome codes of the last turn, for asserting why it went as it did."""
        outcomes = self.last.outcomes if self.last else []
        return [line["code"] for line in outcomes if line.get("code")]
