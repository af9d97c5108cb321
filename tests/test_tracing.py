"""Traces through the OpenTelemetry SDK's in-memory exporter: a turn's span and its load,
model call (GenAI attributes), save and push; a socket frame's and a worker fire's spans as
the turn's parents; no message text in a span unless TRACE_TEXT; and nothing of
OpenTelemetry imported when it is not installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from example_project.demo.agents import booking_agent
from tests.host.conftest import ALIASES, echo_agent
from tests.providers.openai_server import OpenAIServer, stream_chunks
from tests.providers.test_openai_model import envelope
from tests.realtime.test_session_socket import socket, until_turn
from warlock_sessions.host import Host
from warlock_sessions.host.worker import fire_wake
from warlock_sessions.models import Wake
from warlock_sessions.providers.openai import OpenAICompatibleModel
from warlock_sessions.stores import DjangoStore

EXPORTER = InMemorySpanExporter()
SAID = "hi, I'm Ann Lee and my card is 4539 1488 0343 6467"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return span.parent is not None and span.parent.span_id == parent.context.span_id


def texts(exporter: InMemorySpanExporter) -> str:
    return repr([dict(span.attributes or {}) for span in exporter.get_finished_spans()])


@pytest.mark.parametrize("alias", ALIASES)
def test_a_turn_is_a_span_with_its_load_and_save_under_the_request(
    alias: str, spans: InMemorySpanExporter
) -> None:
    host = Host(booking_agent(), DjangoStore(using=alias))
    with trace.get_tracer("a web framework").start_as_current_span("POST /api/sessions/"):
        host.handle("chat", {"message": {"id": "m1", "text": SAID}})
    (request,) = named(spans, "POST /api/sessions/")
    (turn,) = named(spans, "warlock turn")
    (load,) = named(spans, "warlock load")
    (save,) = named(spans, "warlock save")
    assert child_of(turn, request) and child_of(load, turn) and child_of(save, turn)
    assert dict(turn.attributes or {}) == {
        "warlock.session.id": "chat",
        "warlock.agent": "booking",
        "warlock.input.kind": "message",
        "warlock.turn.changed": True,
        "warlock.turn.version": 1,
        "warlock.turn.llm_calls": 0,
        "warlock.turn.messages": 1,
    }
    assert (save.attributes or {})["warlock.outbox.messages"] == 1
    assert "Ann" not in texts(spans) and "4539" not in texts(spans)


def test_text_goes_into_spans_only_when_configured_and_then_redacted(
    spans: InMemorySpanExporter,
) -> None:
    settings = {"TRACE_TEXT": True, "REDACT": ["card"]}
    with override_settings(WARLOCK_SESSIONS=settings):
        Host(booking_agent(), DjangoStore()).handle("t", {"message": {"id": "m1", "text": SAID}})
    (turn,) = named(spans, "warlock turn")
    attributes = dict(turn.attributes or {})
    assert attributes["warlock.input.text"] == "hi, I'm Ann Lee and my card is [card]"
    assert "booking assistant" in str(attributes["warlock.output.text"])
    assert "4539" not in texts(spans)


pytestmark = pytest.mark.django_db(transaction=True)


def test_a_model_call_is_a_client_span_with_the_genai_attributes(
    spans: InMemorySpanExporter,
) -> None:
    with OpenAIServer() as server:
        chunks = stream_chunks(envelope(f"Hello! You said: {SAID}"))
        server.script.reply(
            sse=[{"id": "chatcmpl-9", "model": "gpt-test-0613", **c} for c in chunks]
        )
        model = OpenAICompatibleModel(server.url, "gpt-test", api_key="sk-1", timeout=2)
        hosted = Host(echo_agent(model), DjangoStore()).handle(
            "llm", {"message": {"id": "m1", "text": SAID}}
        )
    assert hosted.llm_calls == 1
    (turn,) = named(spans, "warlock turn")
    (call,) = named(spans, "chat gpt-test")
    assert child_of(call, turn) and call.kind == trace.SpanKind.CLIENT
    attributes = dict(call.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-test"
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["gen_ai.response.model"] == "gpt-test-0613"
    assert attributes["gen_ai.response.id"] == "chatcmpl-9"
    assert "gen_ai.input.messages" not in attributes and "4539" not in texts(spans)


def test_a_failed_model_call_is_an_error_span(spans: InMemorySpanExporter) -> None:
    with OpenAIServer() as server:
        # A server that echoes the prompt in its error: the span keeps the kind of failure.
        server.script.reply(status=400, json={"error": {"message": f"bad prompt: {SAID}"}})
        model = OpenAICompatibleModel(server.url, "gpt-test", api_key="sk-1", timeout=2)
        Host(echo_agent(model), DjangoStore()).handle(
            "llm", {"message": {"id": "m1", "text": SAID}}
        )
    (call,) = named(spans, "chat gpt-test")
    assert call.status.status_code == trace.StatusCode.ERROR
    assert call.status.description == "ProviderError"
    assert [(event.name, dict(event.attributes or {})) for event in call.events] == [
        ("exception", {"exception.type": "ProviderError"})
    ]
    assert "4539" not in repr([(s.status, s.events) for s in spans.get_finished_spans()])


def test_a_worker_fire_is_the_parent_of_its_turn(spans: InMemorySpanExporter) -> None:
    settings = {"AGENTS": {"timer": "tests.host.conftest.timer_agent"}}
    with override_settings(WARLOCK_SESSIONS=settings):
        Host("timer").handle("w", {"start": {"flow": "lembrete", "key": "k1"}})
        wake = Wake.objects.get(session_id="w")
        Wake.objects.filter(pk=wake.pk).update(due_at=timezone.now() - timedelta(seconds=1))
        spans.clear()
        fire_wake(Wake.objects.get(pk=wake.pk))
    (fired,) = named(spans, "warlock wake")
    (turn,) = named(spans, "warlock turn")
    assert child_of(turn, fired)
    assert (fired.attributes or {})["warlock.wake.key"] == wake.key
    assert (turn.attributes or {})["warlock.input.kind"] == "wake"


@pytest.mark.asyncio
async def test_a_socket_frame_is_the_parent_of_its_turn_and_its_push(
    spans: InMemorySpanExporter,
) -> None:
    settings: dict[str, Any] = {
        "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
        "DEFAULT_AGENT": "booking",
    }
    layer = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    with override_settings(WARLOCK_SESSIONS=settings, CHANNEL_LAYERS=layer):
        chat = await socket("/ws/sessions/s1/")
        assert (await chat.connect())[0]
        await chat.send_json_to({"type": "message", "text": "book", "id": "m1"})
        await until_turn(chat)
        other = await socket("/ws/sessions/s1/")  # a second tab, on the session now made
        assert (await other.connect())[0]
        await until_turn(other)
        spans.clear()
        await chat.send_json_to({"type": "message", "text": SAID, "id": "m2"})
        await until_turn(chat)
        await until_turn(other)
        await chat.disconnect()
        await other.disconnect()
    (frame,) = named(spans, "warlock frame")
    (turn,) = named(spans, "warlock turn")
    (pushed,) = named(spans, "warlock push")
    # The socket sends the turn's frames to its own client, then to the session's others.
    assert child_of(turn, frame) and child_of(pushed, frame)
    assert (frame.attributes or {})["warlock.frame.type"] == "message"
    spans.clear()
    with override_settings(WARLOCK_SESSIONS=settings, CHANNEL_LAYERS=layer):
        odd = await socket("/ws/sessions/s9/")
        assert (await odd.connect())[0]
        await odd.send_json_to({"type": "pay 4539148803436467", "text": "x"})
        assert (await odd.receive_json_from(timeout=5))["type"] == "error"
        await odd.disconnect()
    (frame,) = named(spans, "warlock frame")
    assert (frame.attributes or {})["warlock.frame.type"] == "other"
    assert "4539" not in texts(spans) and "Ann" not in texts(spans)


def test_nothing_of_opentelemetry_is_imported_when_it_is_not_installed() -> None:
    script = textwrap.dedent(
        """
        import sys

        class NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "opentelemetry":
                    raise ModuleNotFoundError(name)

        sys.meta_path.insert(0, NotInstalled())
        import django
        django.setup()
        import warlock_sessions.host, warlock_sessions.realtime.base
        import warlock_sessions.providers.openai
        from warlock_sessions.tracing import span

        with span("warlock turn", {"warlock.session.id": "s"}) as traced:
            traced.set({"warlock.turn.changed": True})
            traced.text("warlock.input.text", "hi")
        assert not [m for m in sys.modules if m.startswith("opentelemetry")], sys.modules
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"DJANGO_SETTINGS_MODULE": "tests.settings", "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_with_the_api_but_no_provider_that_records_no_span_is_made() -> None:
    """OpenTelemetry's API alone (another library installed it, or the SDK is not set up
    yet) records nothing: no span is made, and the context is left as it is."""
    script = textwrap.dedent(
        """
        from opentelemetry import context, trace
        from warlock_sessions.tracing import span

        outer = context.get_current()
        with span("warlock turn", {"warlock.session.id": "s"}) as traced:
            traced.set({"warlock.turn.changed": True})
            assert context.get_current() is outer
        trace.set_tracer_provider(trace.NoOpTracerProvider())
        with span("warlock turn"):
            assert context.get_current() is outer
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "ok", done.stderr
