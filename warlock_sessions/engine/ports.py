"""The two model ports a turn calls, and the plain data that crosses them (docs/engine.md).

``understand`` judges a customer message (routing scores, mentions, ``when`` branches, field
values): at most one call, on message turns only, and if it raises, the turn raises.
``speak`` phrases the one reply and extracts the still-pending fields; it returns
:class:`Spoken`, or a :class:`Deferral` (or raises :class:`ProviderError`) when the provider
failed, which the engine turns into a retry wake or a failed run, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import ProviderError as ProviderError  # raised by providers, named with the ports

if TYPE_CHECKING:
    from .flows import Flow, Step
    from .session import Run


@dataclass(frozen=True)
class BranchQuestion:
    """A ``when`` branch of the asking step; its answer goes in ``Understanding.branches[key]``."""

    run_id: str
    step_id: str
    index: int
    when: str

    @property
    def key(self) -> str:
        return f"{self.run_id}/{self.step_id}/{self.index}"


@dataclass(frozen=True)
class UnderstandRequest:
    text: str
    history: Sequence[Any]
    context: Any
    data: Mapping[str, Any]
    now: datetime
    floor_run: Run | None
    floor_flow: Flow | None
    message_flows: Sequence[Flow]
    mention_flows: Sequence[Flow]
    branches: Sequence[BranchQuestion]
    fields: Mapping[str, Mapping[str, Any]]
    #: The conversation's language so far ("en", "pt", ...), or ``None`` while not known.
    language: str | None = None


@dataclass
class Understanding:
    """What the understand call judged. Values are raw: the engine validates and coerces them.
    ``language`` is the language the message is written in, when it says (the engine keeps
    it as the conversation's, in ``metadata["language"]``, unless something pins it)."""

    flows: dict[str, float] = field(default_factory=dict)
    mentions: dict[str, bool] = field(default_factory=dict)
    extract: dict[str, dict[str, Any]] = field(default_factory=dict)
    branches: dict[str, bool] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    llm_calls: int = 1
    language: str | None = None


@dataclass(frozen=True)
class TalkRequest:
    """A talk step queued to speak, with its pending fields (collect - known - at maxAsks).

    ``answering``: the message answers this step's question (the run was asking it when the
    message came), so a model reads the pending fields from it. ``final`` names the pending
    fields on their last ask: if this answer does not give them, they are given up and the
    engine tells the user so in place of the reply. ``refused``: values the message gave for
    other fields that their constraints refused."""

    run: Run
    flow: Flow
    step: Step
    pending: Sequence[str]
    answering: bool = False
    final: Sequence[str] = ()
    #: Other fields the message gave values for that their constraints refused, with why
    #: (``{"time": "out-of-range"}`` for "make it 6pm" at a confirmation): the reply says so
    #: rather than ask again as if nothing was said.
    refused: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IdleRequest:
    """No run holds the floor: the agent's idle speaker answers."""

    idle: Mapping[str, Any]


@dataclass(frozen=True)
class SpeakRequest:
    talk: TalkRequest | IdleRequest
    input_kind: str
    text: str | None
    context: Any
    data: Mapping[str, Any]
    history: Sequence[Any]
    now: datetime
    instructions: Sequence[Any]
    tools: Sequence[Any]
    #: The agent's field definitions (``talk.pending`` names the ones to extract now).
    fields: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The conversation's language, to reply in (``None`` while not known).
    language: str | None = None


@dataclass
class Spoken:
    """The reply: its text, raw values for the pending fields, and data patches from tools.
    ``asked``: the pending fields the reply asks for, when the model knows (a reply that asks
    for the size alone leaves the flavour's asks untouched); ``None``: every pending field."""

    message: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    llm_calls: int = 1
    asked: list[str] | None = None


@dataclass
class Deferral:
    """Why a speak call failed and whether a later wake could fix it."""

    code: str
    retryable: bool
    reset_at_ms: int | None = None
    llm_calls: int = 1


def deferral_of(error: ProviderError, llm_calls: int = 1) -> Deferral:
    """A provider's error as the engine records it: a :class:`Deferral` of its code."""
    return Deferral(error.code, error.retryable, error.reset_at_ms, llm_calls)


@runtime_checkable
class Model(Protocol):
    """Understands messages and speaks. A model whose calls never wait on I/O (no network, no
    database) may say so with a class attribute ``blocking = False``: an async host may then
    run its turns on the event loop instead of a worker thread (``Agent.may_block``)."""

    def understand(self, request: UnderstandRequest) -> Understanding: ...

    def speak(self, request: SpeakRequest) -> Spoken | Deferral: ...
