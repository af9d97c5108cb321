"""``warlock_prune``: what the retention policy no longer keeps goes, in batches; what it keeps
stays (live sessions, each session's last log entries, pending work)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from itertools import pairwise

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from warlock_sessions.host.retention import Retention, prune
from warlock_sessions.models import (
    Conversation,
    ConversationMessage,
    OutboundMessage,
    Session,
    SessionEvent,
    SessionOwner,
    Snapshot,
    Wake,
)
from warlock_sessions.testing import run_blob
from warlock_sessions.testing.factories import OutboundMessageFactory, SessionFactory, WakeFactory

pytestmark = pytest.mark.django_db


def aged(days: int) -> object:
    return timezone.now() - timedelta(days=days)


def events(session_id: str, count: int, days: int) -> None:
    SessionEvent.objects.bulk_create(
        SessionEvent(session_id=session_id, seq=seq, type="turn", created_at=aged(days))
        for seq in range(1, count + 1)
    )


def outbox(session_id: str, status: str, days: int, key: str) -> None:
    OutboundMessageFactory(
        session_id=session_id,
        key=key,
        status=status,
        deliver_after=aged(days),
        created_at=aged(days),
    )


def wake(session_id: str, status: str, days: int, key: str) -> None:
    WakeFactory(
        session_id=session_id, key=key, status=status, due_at=aged(days), created_at=aged(days)
    )


@pytest.fixture
def history() -> None:
    SessionFactory(id="ended", updated_at=aged(100))
    SessionFactory(id="live", updated_at=aged(100), runs=[run_blob("booking", status="asking")])
    SessionFactory(id="recent", updated_at=aged(1))
    SessionOwner.objects.create(session_id="ended", anonymous_key="v1")
    events("ended", 3, 100)
    events("live", 250, 60)
    outbox("live", "delivered", 10, "old")
    outbox("live", "pending", 10, "waiting")
    outbox("live", "delivered", 1, "new")
    wake("live", "fired", 10, "old")
    wake("live", "pending", 10, "due")
    conversation("idle", days=100)
    conversation("pending", days=100, pending={"runId": "r1", "input": "q"})
    conversation("talking", days=1)
    snapshot("run-done", days=40, payload={"runId": "run-done", "status": "completed"})
    snapshot("run-live", days=40, payload={"runId": "run-live", "status": "running"})
    snapshot("run-recent", days=1, payload={"runId": "run-recent", "status": "failed"})
    snapshot("session:old-record", days=100, payload={"type": "conversation-session"})
    snapshot(
        "session:pending-record",
        days=100,
        payload={"type": "conversation-session", "pending": {"runId": "r2"}},
    )


def conversation(id: str, days: int, pending: object = None) -> None:
    Conversation.objects.create(
        id=id, anonymous_key="v1", created_at=aged(days), updated_at=aged(days), pending=pending
    )
    ConversationMessage.objects.create(conversation_id=id, position=0, message={"role": "user"})


def snapshot(key: str, days: int, payload: dict[str, object]) -> None:
    Snapshot.objects.create(key=key, payload=payload, saved_at=aged(days))


def test_prune_deletes_what_the_policy_no_longer_keeps_in_batches(history: None) -> None:
    seen: list[tuple[str, int, int]] = []

    counts = prune(Retention(), batch=7, progress=lambda *step: seen.append(step), pause=-1)

    assert counts == {
        "sessions": 1,
        "events": 150,
        "outbox": 1,
        "wakes": 1,
        "conversations": 1,
        "conversation records": 1,
        "agent session states": 0,
        "graph threads": 0,
        "snapshots": 1,
        "expired memory items": 0,
    }
    assert set(Conversation.objects.values_list("id", flat=True)) == {"pending", "talking"}
    assert not ConversationMessage.objects.filter(conversation_id="idle").exists()
    assert set(Snapshot.objects.values_list("key", flat=True)) == {
        "run-live",
        "run-recent",
        "session:pending-record",
    }
    assert set(Session.objects.values_list("id", flat=True)) == {"live", "recent"}
    assert not SessionEvent.objects.filter(session_id="ended").exists()
    assert not SessionOwner.objects.filter(session_id="ended").exists()
    kept = SessionEvent.objects.filter(session_id="live").values_list("seq", flat=True)
    assert sorted(kept) == list(range(151, 251))  # the last 100, whatever their age
    assert set(OutboundMessage.objects.values_list("key", flat=True)) == {"waiting", "new"}
    assert list(Wake.objects.values_list("key", flat=True)) == ["due"]
    event_steps = [0, *(done for what, done, total in seen if what == "events")]
    assert event_steps[-1] == 150
    steps = [later - earlier for earlier, later in pairwise(event_steps)]
    assert steps[:-1] == [7] * (len(steps) - 1) and 0 < steps[-1] <= 7  # full pages, however sparse


def test_what_came_back_to_life_since_its_key_was_read_is_kept(history: None) -> None:
    """A session a turn revives, a wake set again, between a batch's read and its delete."""
    from warlock_sessions.host import retention

    pages_of = retention._pages_of

    def reviving(rows, batch):  # type: ignore[no-untyped-def]
        pages = pages_of(rows, batch)

        def revived():  # type: ignore[no-untyped-def]
            for keys in pages():
                Session.objects.filter(id="ended").update(run_statuses=" asking ")
                Wake.objects.filter(key="old").update(status="pending")
                yield keys

        return revived

    retention._pages_of = reviving
    try:
        counts = prune(Retention(), pause=-1)
    finally:
        retention._pages_of = pages_of
    assert counts["sessions"] == 0 and counts["wakes"] == 0
    assert Session.objects.filter(id="ended").exists()
    assert SessionEvent.objects.filter(session_id="ended").count() == 3
    assert Wake.objects.filter(key="old").exists()


def test_a_dry_run_counts_and_deletes_nothing(history: None) -> None:
    out = StringIO()
    call_command("warlock_prune", "--dry-run", stdout=out)
    assert out.getvalue().splitlines() == [
        "events: would delete 150",
        "sessions: would delete 1",
        "outbox: would delete 1",
        "wakes: would delete 1",
        "conversations: would delete 1",
        "conversation records: would delete 1",
        "agent session states: would delete 0",
        "graph threads: would delete 0",
        "snapshots: would delete 1",
        "expired memory items: would delete 0",
    ]
    assert Session.objects.count() == 3 and SessionEvent.objects.count() == 253


def test_the_command_shows_progress_and_never_keeps_a_kind(history: None) -> None:
    out, err = StringIO(), StringIO()
    call_command("warlock_prune", "--events", "never", "--batch", "100", stdout=out, stderr=err)
    assert "events" not in out.getvalue()
    assert SessionEvent.objects.filter(session_id="live").count() == 250
    assert "sessions [##############################] 1/1" in err.getvalue()


@pytest.mark.parametrize(
    "args",
    [["--sessions", "soon"], ["--batch", "0"], ["--keep-events", "-1"], ["--pause", "-1"]],
)
def test_bad_options_are_refused(args: list[str]) -> None:
    with pytest.raises(CommandError):
        call_command("warlock_prune", *args)


def test_a_prune_remembering_few_sessions_still_keeps_each_ones_last_entries(
    history: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warlock_sessions.host import retention

    events("recent", 120, 60)
    monkeypatch.setattr(retention, "LAST_SEQS_REMEMBERED", 0)  # forgets after every read

    counts = prune(Retention(), batch=7, pause=-1)

    assert counts["events"] == 150 + 20
    for session_id in ("live", "recent"):
        kept = SessionEvent.objects.filter(session_id=session_id).values_list("seq", flat=True)
        assert len(kept) == 100 and max(kept) in (250, 120)


def test_a_cancelled_run_s_snapshot_is_a_finished_one() -> None:
    snapshot("run-cancelled", days=40, payload={"runId": "run-cancelled", "status": "cancelled"})
    assert prune(Retention(), pause=-1)["snapshots"] == 1
    assert not Snapshot.objects.filter(key="run-cancelled").exists()


def test_the_progress_bars_are_plain_and_one_a_line() -> None:
    """They were red (stderr's error style) and a bar left short was overwritten."""
    from io import StringIO

    from django.core.management.base import OutputWrapper

    from warlock_sessions.management.commands.warlock_prune import Command

    out = StringIO()
    command = Command()
    command.stderr = OutputWrapper(out)
    command.stderr.style_func = lambda text: f"\x1b[31m{text}\x1b[0m"  # as on a terminal
    command._progress("events", 5, 10)  # rows went while it ran: never reaches 10
    command._progress("outbox", 3, 3)
    written = out.getvalue()
    assert "\x1b[" not in written
    lines = written.split("\n")
    assert lines[0].endswith("events   [###############---------------] 5/10")
    assert lines[1].endswith("outbox   [##############################] 3/3")


def test_a_session_waiting_for_a_person_is_not_an_ended_one() -> None:
    SessionFactory(id="with-people", updated_at=aged(100), handover="waiting")
    SessionFactory(id="ended", updated_at=aged(100))
    prune(Retention(), batch=7, pause=-1)
    assert list(Session.objects.values_list("id", flat=True)) == ["with-people"]


def test_an_agent_s_sessions_and_log_live_as_its_retention_says() -> None:
    """WARLOCK_SESSIONS["RETENTION"]: booking keeps ended sessions 10 days and their log 3
    (its last 2 entries kept); support's never go; every other agent as the command says."""
    from django.test import override_settings

    for agent, days in (("booking", 20), ("support", 400), ("other", 20), ("other", 100)):
        session_id = f"{agent}-{days}"
        SessionFactory(id=session_id, agent=agent, updated_at=aged(days))
        events(session_id, 5, days=5)
    configured = {
        "RETENTION": {
            "booking": {"sessions": "10d", "events": "3d", "keep_events": 2},
            "support": {"sessions": "never", "events": "never"},
        }
    }
    out = StringIO()
    with override_settings(WARLOCK_SESSIONS=configured):
        call_command("warlock_prune", "--pause", "0", stdout=out, stderr=StringIO())
    assert sorted(Session.objects.values_list("id", flat=True)) == ["other-20", "support-400"]
    assert "sessions of booking: deleted 1" in out.getvalue()
    logged = {
        session_id: SessionEvent.objects.filter(session_id=session_id).count()
        for session_id in ("other-20", "support-400")
    }
    assert logged == {"other-20": 5, "support-400": 5}  # 5 days old: the default keeps 30


def test_an_agent_s_log_is_cut_to_its_own_age() -> None:
    from warlock_sessions.host.retention import AgentRetention

    SessionFactory(id="b", agent="booking", updated_at=aged(1))
    SessionFactory(id="o", agent="other", updated_at=aged(1))
    for session_id in ("b", "o"):
        events(session_id, 5, days=5)
    agents = {"booking": AgentRetention(sessions=None, events=timedelta(days=3), keep_events=2)}
    counts = prune(Retention(agents=agents), batch=2, pause=-1)
    assert counts["events of booking"] == 3 and counts["events"] == 0
    assert SessionEvent.objects.filter(session_id="b").count() == 2
    assert SessionEvent.objects.filter(session_id="o").count() == 5


@pytest.mark.parametrize(
    "entry",
    [
        {"sessions": "soon"},
        {"session": "10d"},
        {"keep_events": -1},
        "10d",
    ],
)
def test_a_bad_retention_entry_is_refused_with_its_path(entry: object) -> None:
    from django.test import override_settings

    from warlock_sessions.checks import check_settings

    with override_settings(WARLOCK_SESSIONS={"RETENTION": {"booking": entry}}):
        messages = check_settings()
    assert [message.id for message in messages] == ["warlock_sessions.E027"]
    assert "RETENTION']['booking" in messages[0].msg


def test_a_log_left_by_a_session_gone_is_pruned_whatever_the_agents_retention() -> None:
    from warlock_sessions.host.retention import AgentRetention

    events("gone", 5, days=40)
    agents = {"booking": AgentRetention(sessions=None, events=None, keep_events=0)}
    prune(Retention(keep_events=0, agents=agents), batch=2, pause=-1)
    assert not SessionEvent.objects.filter(session_id="gone").exists()
