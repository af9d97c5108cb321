"""The demo's durable workflow survives its process being killed mid-run (SIGKILL, a real
child process) and is resumed from the admin by a worker, as the example project's README
says."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections
from django.test import Client, override_settings

from example_project.demo import workflows
from warlock_sessions.snapshots import DjangoSnapshotStore, default_snapshot_store

pytestmark = pytest.mark.django_db(transaction=True)
SETTINGS = {"SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore"}


def run_the_demo() -> None:
    call_command("demo_workflow", "--run-id", "demo-1", "--order", "7")


@override_settings(WARLOCK_SESSIONS=SETTINGS)
def test_killed_mid_run_then_resumed_from_the_admin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workflows, "STEP_SECONDS", 0.4)
    store = DjangoSnapshotStore()
    connections.close_all()
    child = multiprocessing.get_context("fork").Process(target=run_the_demo)
    child.start()
    deadline = time.monotonic() + 20
    while (store.load("demo-1") or {}).get("next") != "pack" and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(child.pid or 0, signal.SIGKILL)  # during "pack"
    child.join(10)
    killed = store.load("demo-1")
    assert killed is not None and (killed["status"], killed["next"]) == ("running", "pack")

    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    listed = admin.get("/admin/warlock_sessions/snapshot/?status=running")
    assert b"demo-1" in listed.content and b"fulfil-order" in listed.content
    assert b"1 of 3 steps; next: pack" in listed.content  # its progress
    resumed = admin.post(
        "/admin/warlock_sessions/snapshot/",
        {"action": "resume_runs", "_selected_action": ["demo-1"]},
        follow=True,
    )
    # The request only queues it: a long run never holds the admin's page.
    assert [str(m) for m in resumed.context["messages"]] == [
        "demo-1: queued; a worker resumes it (reload to follow its progress)."
    ]
    assert b"queued for a worker by root" in resumed.content
    assert store.load("demo-1")["next"] == "pack"  # type: ignore[index]
    call_command("warlock_worker", "--until-idle", verbosity=0)
    after = admin.get("/admin/warlock_sessions/snapshot/")
    assert b"3 of 3 steps" in after.content and b"queued for a worker" not in after.content
    done = default_snapshot_store().load("demo-1")  # type: ignore[union-attr]
    assert done is not None and done["state"] == {
        "reserve": "reserved order 7",
        "pack": "packed order 7",
        "ship": "shipped order 7",
    }


@override_settings(WARLOCK_SESSIONS=SETTINGS)
def test_demo_workflow_prints_its_run_id_and_each_step(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """It printed no run id (the README says to resume by it) and no progress."""
    monkeypatch.setattr(workflows, "STEP_SECONDS", 0.0)
    call_command("demo_workflow", "--order", "9")
    out = capsys.readouterr().out
    run_id = out.split()[1].rstrip(":")
    assert run_id.startswith("fulfil-order_") and f"--resume {run_id}" in out
    for step in ("reserve", "pack", "ship"):
        assert f"  {step}: done" in out
    assert f"run {run_id}: completed" in out
