"""Traces: each turn, model call, socket frame and worker fire as an OpenTelemetry span.

Spans are made only when ``opentelemetry`` (the API) is installed and a tracer provider that
records is set (the SDK's); otherwise :func:`span` hands out a recorder that records nothing,
and without the API nothing of OpenTelemetry is imported. Spans
start in the current context, so an instrumented server's HTTP or websocket span is their
parent. Message text goes into a span only with ``WARLOCK_SESSIONS["TRACE_TEXT"]`` (and then
redacted, as stored text is): the app tells this module so when it starts (``configure``), as
this module stays below the settings for the providers, which know nothing of Django.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

#: The instrumentation scope the spans are recorded under.
TRACER_NAME = "warlock_sessions"

_installed: list[bool] = []
#: Whether text goes into spans, and what it goes through first (``configure``).
_text_policy: dict[str, Callable[..., Any]] = {
    "allowed": lambda: False,
    "redact": lambda text: text,
}


def configure(*, allowed: Callable[[], bool], redact: Callable[[str], str]) -> None:
    """Text goes into spans when ``allowed()``, as ``redact(text)``."""
    _text_policy.update(allowed=allowed, redact=redact)


def tracing_installed() -> bool:
    """Whether the OpenTelemetry API can be imported (looked up once, without importing it)."""
    if not _installed:
        try:
            found = importlib.util.find_spec("opentelemetry.trace") is not None
        except ImportError:  # no opentelemetry package at all
            found = False
        _installed.append(found)
    return _installed[0]


Attributes = Mapping[str, Any]


class Recorder:
    """What code inside a span sets on it: attributes, and the error that ended it. The one
    given without OpenTelemetry records nothing."""

    def __init__(self, span: Any = None) -> None:
        self._span = span

    def set(self, attributes: Attributes) -> None:
        if self._span is not None:
            self._span.set_attributes(_attributes(attributes))

    def text(self, key: str, text: str | None) -> None:
        """``text`` as the attribute ``key``, only when ``TRACE_TEXT`` is set."""
        if self._span is not None and text is not None and _text_policy["allowed"]():
            self._span.set_attribute(key, _text_policy["redact"](text))


def _attributes(attributes: Attributes) -> dict[str, Any]:
    """OpenTelemetry takes text, numbers, booleans and lists of one of them; ``None`` is no
    attribute at all."""
    return {
        key: value if isinstance(value, str | bool | int | float | list | tuple) else str(value)
        for key, value in attributes.items()
        if value is not None
    }


def _tracer() -> Any | None:
    """The tracer to make spans with; ``None`` without the OpenTelemetry API, or while no
    provider is set that records (the API alone, installed by some other library, gives
    spans that record nothing, and they cost a socket's turn about 7 % of its CPU)."""
    if not tracing_installed():
        return None
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return _tracer_of(provider)


@functools.lru_cache(maxsize=1)
def _tracer_of(provider: Any) -> Any:
    """The tracer of the provider spans were last made with."""
    return provider.get_tracer(TRACER_NAME)


#: What :func:`span` gives while nothing is traced: one recorder that records nothing.
_UNTRACED = nullcontext(Recorder())


def span(
    name: str, attributes: Attributes | None = None, *, kind: str = "INTERNAL"
) -> AbstractContextManager[Recorder]:
    """A span named ``name`` around the block, a child of the current one; an exception that
    leaves the block is recorded on it and sets its status to error."""
    tracer = _tracer()
    if tracer is None:
        return _UNTRACED
    return _recorded(tracer, name, attributes, kind)


@contextmanager
def _recorded(
    tracer: Any, name: str, attributes: Attributes | None, kind: str
) -> Iterator[Recorder]:
    from opentelemetry import trace

    with tracer.start_as_current_span(
        name,
        kind=getattr(trace.SpanKind, kind),
        attributes=_attributes(attributes or {}),
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield Recorder(current)
        except BaseException as error:
            # The kind of failure only: an exception's message and traceback may quote what
            # someone said, which goes into a span only with TRACE_TEXT.
            kind_of = type(error).__name__
            current.add_event("exception", {"exception.type": kind_of})
            current.set_status(trace.Status(trace.StatusCode.ERROR, kind_of))
            raise
