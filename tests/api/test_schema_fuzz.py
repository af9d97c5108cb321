"""Schemathesis drives every operation of the OpenAPI document in-process: whatever the inputs,
the API answers with a 4xx code or success, never a 5xx."""

from __future__ import annotations

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


@pytest.fixture(params=["anonymous", "staff"])
def headers(request: pytest.FixtureRequest, client) -> dict[str, str]:  # type: ignore[no-untyped-def]
    if request.param == "anonymous":
        return {}
    client.force_login(User.objects.create_user("root", is_staff=True))
    return {"Cookie": f"sessionid={client.cookies['sessionid'].value}"}


@pytest.mark.django_db
@override_settings(WARLOCK_SESSIONS=SETTINGS)
@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_makes_the_api_answer_with_a_server_error(case, headers) -> None:  # type: ignore[no-untyped-def]
    response = case.call(headers=headers)
    assert response.status_code < 500, (case.method, case.formatted_path, response.text[:500])
