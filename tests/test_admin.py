"""The read-only sessions admin renders for staff and is refused to everyone else."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from warlock_sessions.testing import run_blob
from warlock_sessions.testing.factories import SessionFactory

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/warlock_sessions/session/"


@pytest.fixture
def staff_client(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


@pytest.mark.parametrize(
    "query", ["", "?run_status=waiting", "?flow=retomar", "?q=busy", "?agent=support"]
)
def test_the_session_list_renders_with_each_filter(staff_client: Client, query: str) -> None:
    SessionFactory(
        id="busy", agent="support", runs=[run_blob("retomar", status="waiting", step_id="w1")]
    )
    SessionFactory(id="idle")

    response = staff_client.get(CHANGELIST + query)

    assert response.status_code == 200
    assert b"busy" in response.content
    if query:
        assert b"idle</a>" not in response.content


def test_the_detail_page_shows_the_blob_read_only(staff_client: Client) -> None:
    SessionFactory(id="s1", runs=[run_blob("triagem")])

    response = staff_client.get(f"{CHANGELIST}s1/change/")

    assert response.status_code == 200
    assert b"&quot;flowId&quot;: &quot;triagem&quot;" in response.content
    assert b'name="_save"' not in response.content
    assert staff_client.get(f"{CHANGELIST}add/").status_code == 403


def test_an_unreadable_row_is_shown_with_its_error(staff_client: Client) -> None:
    SessionFactory(id="broken", blob='{"v": 3}')
    response = staff_client.get(f"{CHANGELIST}broken/change/")
    assert response.status_code == 200
    assert b"v is 3, expected 4" in response.content


def test_a_non_staff_user_is_refused(client: Client) -> None:
    client.force_login(User.objects.create_user("ana", password="pw"))
    SessionFactory(id="s1")
    response = client.get(CHANGELIST)
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
