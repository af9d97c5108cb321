"""Schemathesis drives every operation of the OpenAPI document in-process, as staff and as an
ordinary user (Basic credentials, so no CSRF token is needed): whatever the inputs, the API
answers with a 4xx code or success, never a 5xx; and every case gets past authentication (no
401, no CSRF refusal, a 403 only from the handlers), so the handlers themselves are fuzzed."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import override_settings
from hypothesis import HealthCheck, settings

SETTINGS = {
    "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
    "DEFAULT_AGENT": "booking",
    "CONVERSATION_AGENT": "tests.conversations.agents.assistant",
}
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())


@pytest.fixture(autouse=True)
def keep_the_test_connection() -> Iterator[None]:
    """A WSGI request closes old connections when it ends; Django's test client turns that off
    so the test transaction survives, and so must a raw WSGI call."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture(params=["staff", "user"])
def identity(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    User.objects.create_user(
        request.param,
        password="pw",
        is_staff=request.param == "staff",
        is_superuser=request.param == "staff",
    )
    token = base64.b64encode(f"{request.param}:pw".encode()).decode()
    return request.param, {"Authorization": f"Basic {token}"}


@pytest.mark.django_db
@override_settings(WARLOCK_SESSIONS=SETTINGS)
@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_makes_the_api_answer_with_a_server_error(case, identity) -> None:  # type: ignore[no-untyped-def]
    who, headers = identity
    case.headers = {
        name: value for name, value in (case.headers or {}).items() if name.lower() != "cookie"
    }
    response = case.call(headers=headers)
    assert response.status_code < 500, (case.method, case.formatted_path, response.text[:500])
    body = response.json() if response.content else {}
    detail = str(body.get("detail", "")) if isinstance(body, dict) else ""
    assert response.status_code != 401 and "CSRF" not in detail, (case.method, detail)
    # Every case gets past authentication: staff are never refused, and a user only by the
    # handlers themselves (the trust model, or the policy on a raw write).
    if who == "staff":
        assert response.status_code != 403, (case.method, case.formatted_path, body)
    elif response.status_code == 403:
        assert body.get("code") in ("input-not-allowed", "permission-denied"), body
