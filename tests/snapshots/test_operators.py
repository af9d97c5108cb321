"""Operators and clients: ``/api/snapshots/`` (staff or model permissions only) and the
snapshot admin (status and drift filters, resume, force-resume after a confirmation)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings
from rest_framework.test import APIClient

from warlock_sessions.snapshots import default_snapshot_store
from warlock_sessions.workflows import Step, StepContext, Workflow
from warlock_sessions.workflows.resumes import run_asked_resumes

pytestmark = [
    pytest.mark.django_db(transaction=True),  # snapshots are never saved inside a transaction
    pytest.mark.usefixtures("django_snapshots"),
]


@pytest.fixture
def django_snapshots() -> Any:
    with override_settings(
        WARLOCK_SESSIONS={"SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore"}
    ):
        yield default_snapshot_store()


def api_as(username: str, *, staff: bool = False, perms: tuple[str, ...] = ()) -> APIClient:
    user = User.objects.create_user(username, is_staff=staff, is_superuser=staff)
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user.pk))
    return client


def seed(store: Any) -> None:
    for key in ("order_1", "order_2", "other/with/slashes"):
        store.save({"runId": key, "workflowName": "order", "status": "running"})


def test_staff_list_read_and_delete_snapshots(django_snapshots: Any) -> None:
    seed(django_snapshots)
    staff = api_as("root", staff=True)
    listed = staff.get("/api/snapshots/", {"prefix": "order_"})
    assert listed.status_code == 200 and listed.json()["results"] == ["order_1", "order_2"]
    assert staff.get("/api/snapshots/").json()["count"] == 3

    read = staff.get("/api/snapshots/other/with/slashes/")
    assert read.status_code == 200 and read.json()["snapshot"]["runId"] == "other/with/slashes"

    assert staff.delete("/api/snapshots/order_1/").status_code == 204
    gone = staff.get("/api/snapshots/order_1/")
    assert (gone.status_code, gone.json()["code"]) == (404, "not-found")
    assert staff.delete("/api/snapshots/order_1/").status_code == 404
    assert staff.get("/api/snapshots/bad%00key/").json()["code"] == "invalid-input"


def test_everyone_else_is_refused_alike_and_permissions_split_read_from_delete(
    django_snapshots: Any,
) -> None:
    seed(django_snapshots)
    stranger = api_as("mallory")
    for path in ("/api/snapshots/", "/api/snapshots/order_1/", "/api/snapshots/nope/"):
        assert stranger.get(path).status_code == 403
    assert stranger.delete("/api/snapshots/order_1/").status_code == 403
    assert APIClient().get("/api/snapshots/order_1/").status_code in (401, 403)

    reader = api_as("reader", perms=("view_snapshot",))
    assert reader.get("/api/snapshots/order_1/").status_code == 200
    assert reader.delete("/api/snapshots/order_1/").status_code == 403
    deleter = api_as("deleter", perms=("delete_snapshot",))
    assert deleter.delete("/api/snapshots/order_1/").status_code == 204


def test_without_a_snapshot_store_the_api_says_so() -> None:
    with override_settings(WARLOCK_SESSIONS={}):
        answer = api_as("root", staff=True).get("/api/snapshots/")
    assert (answer.status_code, answer.json()["code"]) == (404, "no-snapshot-store")


def broken_then_fixed() -> tuple[Workflow, dict[str, bool]]:
    broken = {"ship": True}

    def ship(ctx: StepContext) -> str:
        if broken["ship"]:
            raise ConnectionError("carrier down")
        return "shipped"

    return Workflow("admin-order", [Step("pack", run=lambda ctx: 1), Step("ship", run=ship)]), (
        broken
    )


def test_the_admin_shows_drift_and_resumes_after_confirmation(
    client: Client, django_snapshots: Any
) -> None:
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    workflow, broken = broken_then_fixed()
    workflow.execute(run_id="admin-1")
    workflow.execute(run_id="admin-2")
    django_snapshots.save({"runId": "mystery", "workflowName": "nobody", "status": "running"})
    broken["ship"] = False

    page = client.get("/admin/warlock_sessions/snapshot/")
    assert page.status_code == 200 and b"admin-1" in page.content
    failed = client.get("/admin/warlock_sessions/snapshot/?status=failed")
    assert b"admin-1" in failed.content and b"mystery" not in failed.content
    unknown = client.get("/admin/warlock_sessions/snapshot/?drift=unknown")
    assert b"mystery" in unknown.content and b"admin-1" not in unknown.content
    detail = client.get("/admin/warlock_sessions/snapshot/admin-1/change/")
    assert detail.status_code == 200 and b"&quot;workflowName&quot;" in detail.content

    resumed = client.post(
        "/admin/warlock_sessions/snapshot/",
        {"action": "resume_runs", "_selected_action": ["admin-1", "mystery"]},
        follow=True,
    )
    said = [str(message) for message in resumed.context["messages"]]
    assert "admin-1: queued; a worker resumes it (reload to follow its progress)." in said, said
    assert "mystery: no workflow or supervisor of that name is loaded here." in said
    assert django_snapshots.load("admin-1")["status"] == "failed"  # until a worker resumes it
    assert run_asked_resumes() == 1
    assert django_snapshots.load("admin-1")["status"] == "completed"

    # The definition changes: admin-2 now drifts; forcing needs a confirmation first.
    changed = Workflow(
        "admin-order",
        [
            Step("pack", run=lambda ctx: 1),
            Step("check", run=lambda ctx: 2),
            Step("ship", run=lambda ctx: "shipped"),
        ],
    )
    assert client.get("/admin/warlock_sessions/snapshot/?drift=drifted").content.count(b"admin-2")
    plain = client.post(
        "/admin/warlock_sessions/snapshot/",
        {"action": "resume_runs", "_selected_action": ["admin-2"]},
        follow=True,
    )
    refused = [str(message) for message in plain.context["messages"]]
    assert len(refused) == 1 and "was saved with signature" in refused[0]
    assert django_snapshots.load("admin-2")["status"] == "failed"
    ask = client.post(
        "/admin/warlock_sessions/snapshot/",
        {"action": "force_resume_runs", "_selected_action": ["admin-2"]},
    )
    assert ask.status_code == 200 and b"Yes, resume them" in ask.content
    assert django_snapshots.load("admin-2")["status"] == "failed"
    client.post(
        "/admin/warlock_sessions/snapshot/",
        {"action": "force_resume_runs", "_selected_action": ["admin-2"], "confirmed": "yes"},
    )
    assert run_asked_resumes() == 1
    saved = django_snapshots.load("admin-2")
    assert saved["status"] == "completed" and saved["signature"] == changed.signature


def test_keys_ending_like_a_format_and_keys_too_long_for_the_store(
    django_snapshots: Any, tmp_path: Any
) -> None:
    django_snapshots.save({"runId": "report.json", "status": "running"})
    staff = api_as("root", staff=True)
    assert staff.get("/api/snapshots/report.json/").json()["key"] == "report.json"
    assert staff.delete("/api/snapshots/report.json").status_code == 404  # no trailing slash
    assert staff.delete("/api/snapshots/report.json/").status_code == 204
    assert staff.get("/api/sessions/chat.json/").status_code == 404  # a session id, not a format

    with override_settings(
        WARLOCK_SESSIONS={
            "SNAPSHOT_STORE": "warlock_sessions.snapshots.FileSnapshotStore",
            "SNAPSHOT_STORE_OPTIONS": {"directory": str(tmp_path)},
        }
    ):
        long_key = "é" * 100  # 100 characters, 600 encoded bytes: no file name holds it
        answer = staff.get(f"/api/snapshots/{long_key}/")
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid-input")


def test_the_admin_lists_and_resumes_cancelled_runs_as_such(
    client: Client, django_snapshots: Any
) -> None:
    """Cancellation added a status the admin's status filter did not offer."""
    from warlock_sessions.locks import AbortSignal
    from warlock_sessions.workflows import Step, Workflow

    signal = AbortSignal()

    def stop(ctx: StepContext) -> str:
        signal.abort()
        return "a"

    workflow = Workflow("cancellable", [Step("a", run=stop), Step("b", run=lambda ctx: "b")])
    assert workflow.execute(run_id="cancel-1", signal=signal).status == "cancelled"
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/admin/warlock_sessions/snapshot/?status=cancelled")
    assert page.status_code == 200 and b"cancel-1" in page.content
    offered = client.get("/admin/warlock_sessions/snapshot/").content
    assert b"?status=cancelled" in offered  # a choice of the status filter
    resumed = client.post(
        "/admin/warlock_sessions/snapshot/",
        {"action": "resume_runs", "_selected_action": ["cancel-1"]},
        follow=True,
    )
    said = [str(message) for message in resumed.context["messages"]]
    assert any("was cancelled" in line for line in said), said  # refused without force
    assert django_snapshots.load("cancel-1")["status"] == "cancelled"


def test_a_running_run_is_cancelled_over_the_api_and_stops_at_its_next_step(
    django_snapshots: Any,
) -> None:
    """Nothing could cancel a run another process was running."""
    import threading

    from django.db import connection

    packing, cancelled = threading.Event(), threading.Event()
    ran: list[str] = []

    def pack(ctx: StepContext) -> str:
        ran.append("pack")
        packing.set()
        cancelled.wait(10)
        return "packed"

    workflow = Workflow(
        "api-cancel", [Step("pack", run=pack), Step("ship", run=lambda ctx: ran.append("ship"))]
    )
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(workflow.execute(run_id="run-1"))
        finally:
            connection.close()

    worker = threading.Thread(target=run)
    worker.start()
    assert packing.wait(10)
    changer = api_as("changer", perms=("view_snapshot", "change_snapshot"))
    answer = changer.patch(
        "/api/snapshots/run-1/", {"status": "cancelled", "reason": "duplicate order"}, format="json"
    )
    cancelled.set()
    worker.join(10)
    assert answer.status_code == 200, answer.json()
    assert answer.json()["snapshot"]["status"] == "cancelled"
    assert (results[0].status, ran) == ("cancelled", ["pack"])
    saved = django_snapshots.load("run-1")
    assert (saved["status"], saved["cancelReason"], saved["state"]) == (
        "cancelled",
        "duplicate order",
        {"pack": "packed"},
    )

    again = changer.patch("/api/snapshots/run-1/", {"status": "cancelled"}, format="json")
    assert (again.status_code, again.json()["code"], again.json()["status"]) == (
        409,
        "run-not-running",
        "cancelled",
    )


def test_cancel_requests_are_checked_and_need_the_change_permission(
    django_snapshots: Any, tmp_path: Any
) -> None:
    seed(django_snapshots)
    reader = api_as("reader", perms=("view_snapshot",))
    assert reader.patch("/api/snapshots/order_1/", {"status": "cancelled"}).status_code == 403
    blind = api_as("blind", perms=("change_snapshot",))  # would read the snapshot it answers
    assert blind.patch("/api/snapshots/order_1/", {"status": "cancelled"}).status_code == 403
    assert (
        api_as("mallory").patch("/api/snapshots/nope/", {"status": "cancelled"}).status_code == 403
    )
    staff = api_as("root", staff=True)
    for body in (
        {"status": "completed"},
        {"state": {}},
        {"status": "cancelled", "reason": 5},
        {"status": "cancelled", "reason": "x" * 501},
        {"status": "cancelled", "reason": "nul\x00"},
        {"status": "cancelled", "runId": "other"},
    ):
        answer = staff.patch("/api/snapshots/order_1/", body, format="json")
        assert (answer.status_code, answer.json()["code"]) == (400, "invalid-input"), body
    assert django_snapshots.load("order_1")["status"] == "running"
    missing = staff.patch("/api/snapshots/nope/", {"status": "cancelled"}, format="json")
    assert (missing.status_code, missing.json()["code"]) == (404, "not-found")
    slashes = staff.patch(
        "/api/snapshots/other/with/slashes/", {"status": "cancelled"}, format="json"
    )
    assert slashes.status_code == 200 and slashes.json()["snapshot"]["cancelReason"].endswith(
        "root"
    )

    with override_settings(
        WARLOCK_SESSIONS={
            "SNAPSHOT_STORE": "warlock_sessions.snapshots.FileSnapshotStore",
            "SNAPSHOT_STORE_OPTIONS": {"directory": str(tmp_path)},
        }
    ):
        default_snapshot_store().save({"runId": "f1", "status": "running"})  # type: ignore[union-attr]
        refused = staff.patch("/api/snapshots/f1/", {"status": "cancelled"}, format="json")
        assert (refused.status_code, refused.json()["code"]) == (409, "cancel-unsupported")
        assert default_snapshot_store().load("f1")["status"] == "running"  # type: ignore[union-attr]


def test_the_admin_cancels_running_runs_and_leaves_settled_ones(
    client: Client, django_snapshots: Any
) -> None:
    seed(django_snapshots)
    Workflow("settled", [Step("a", run=lambda ctx: 1)]).execute(run_id="done-1")
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    answer = client.post(
        "/admin/warlock_sessions/snapshot/",
        {"action": "cancel_runs", "_selected_action": ["order_1", "done-1"]},
        follow=True,
    )
    said = [str(message) for message in answer.context["messages"]]
    assert "order_1: cancelled" in said, said
    assert any(line.startswith("done-1: ") and "is completed" in line for line in said), said
    assert django_snapshots.load("order_1")["cancelReason"] == "cancelled in the admin by root"
    assert django_snapshots.load("done-1")["status"] == "completed"
    assert django_snapshots.load("order_2")["status"] == "running"


def test_a_snapshot_page_is_a_view_with_no_save_buttons(
    client: Client, django_snapshots: Any
) -> None:
    """It said "Change snapshot", with SAVE buttons, though nothing could be edited."""
    seed(django_snapshots)
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/admin/warlock_sessions/snapshot/order_1/change/")
    assert page.status_code == 200
    assert b"View snapshot" in page.content and b"Change snapshot" not in page.content
    assert b'name="_save"' not in page.content and b'name="_continue"' not in page.content


def test_the_admin_says_when_a_worker_is_resuming_the_run_already(
    client: Client, django_snapshots: Any
) -> None:
    from tests.workflows.test_asked_resumes import resuming

    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    workflow, _ = broken_then_fixed()
    workflow.execute(run_id="busy-1")
    resuming("default", "busy-1")
    resumed = client.post(
        "/admin/warlock_sessions/snapshot/",
        {"action": "resume_runs", "_selected_action": ["busy-1"]},
        follow=True,
    )
    said = [str(message) for message in resumed.context["messages"]]
    assert said == ["busy-1: a worker is resuming it now; this ask was not queued."], said
