"""The WARLOCK_SESSIONS settings object and the system checks that guard it."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from tests.checks import warlock_check_ids
from warlock_sessions.conf import SettingError, warlock_settings
from warlock_sessions.permissions import OwnerOrStaff, SessionPolicy
from warlock_sessions.stores import DjangoStore, MemoryStore, default_store


def test_defaults_apply_and_overrides_reload() -> None:
    assert warlock_settings.STORE.cls is DjangoStore
    with override_settings(WARLOCK_SESSIONS={"STORE": "warlock_sessions.stores.MemoryStore"}):
        assert warlock_settings.STORE.cls is MemoryStore
        assert isinstance(default_store(), MemoryStore)
    assert warlock_settings.STORE.cls is DjangoStore


def test_a_bad_import_string_names_the_setting() -> None:
    with (
        override_settings(WARLOCK_SESSIONS={"STORE": "myapp.nowhere.Store"}),
        pytest.raises(
            ImportError, match=r"WARLOCK_SESSIONS\['STORE'\] = 'myapp.nowhere.Store' cannot"
        ),
    ):
        warlock_settings.STORE  # noqa: B018


def test_an_unknown_attribute_is_an_error() -> None:
    with pytest.raises(AttributeError, match="Invalid WARLOCK_SESSIONS setting: 'STOER'"):
        warlock_settings.STOER  # noqa: B018


def test_the_default_configuration_passes_the_checks() -> None:
    assert warlock_check_ids() == []


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        ({"STORE": "myapp.nowhere.Store"}, ["warlock_sessions.E001"]),
        ({"STORE": "warlock_sessions.errors.WarlockError"}, ["warlock_sessions.E002"]),
        ({"STORE_OPTIONS": {"usign": "default"}}, ["warlock_sessions.E012"]),
        ({"STORE_OPTIONS": "default"}, ["warlock_sessions.E004"]),
        ({"STOER": "x"}, ["warlock_sessions.W001"]),
        ({"DELIVER": "myapp.nowhere.send"}, ["warlock_sessions.E010"]),
        ({"DELIVER": "warlock_sessions.conf.SETTING_NAME"}, ["warlock_sessions.E014"]),
        ({"DELIVER": "tests.host.test_host.flaky_deliver"}, []),
        (
            {
                "STORE": "warlock_sessions.stores.FileStore",
                "STORE_OPTIONS": {"directory": "/tmp/x"},
            },
            [],
        ),
    ],
)
def test_misconfiguration_is_reported_with_a_stable_id(configured, expected) -> None:  # type: ignore[no-untyped-def]
    with override_settings(WARLOCK_SESSIONS=configured):
        assert warlock_check_ids() == expected


def test_realtime_without_a_channel_layer_is_reported() -> None:
    with override_settings(
        ASGI_APPLICATION="example_project.asgi.application", CHANNEL_LAYERS=None
    ):
        assert warlock_check_ids() == ["warlock_sessions.E011"]
    layers = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    with override_settings(
        ASGI_APPLICATION="example_project.asgi.application", CHANNEL_LAYERS=layers
    ):
        # Works, but what a worker process logs reaches sockets only through the log: said
        # by the deployment checks (check --deploy), not at every command of `make demo`.
        assert warlock_check_ids(ignored=("warlock_sessions.W010",)) == ["warlock_sessions.W004"]
        assert warlock_check_ids(ignored=(), deploy=False) == []
    shared = {"default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer"}}
    with override_settings(
        ASGI_APPLICATION="example_project.asgi.application", CHANNEL_LAYERS=shared
    ):
        assert warlock_check_ids(ignored=("warlock_sessions.W010",)) == []


WHITENOISE = "whitenoise.middleware.WhiteNoiseMiddleware"


def test_a_deployment_that_serves_no_static_files_is_warned() -> None:
    """DEBUG off and nothing serving /static/: the admin would have no styles, no flow graph
    and no live hand-over (``check --deploy`` only; a web server or CDN silences it)."""
    ids = partial(warlock_check_ids, ignored=("warlock_sessions.W004",))
    assert "warlock_sessions.W010" in ids()
    assert "warlock_sessions.W010" not in ids(deploy=False)
    with override_settings(MIDDLEWARE=[*settings.MIDDLEWARE, WHITENOISE]):
        assert "warlock_sessions.W010" not in ids()
    with override_settings(STATIC_URL="https://cdn.example.com/static/"):
        assert "warlock_sessions.W010" not in ids()
    with override_settings(DEBUG=True):  # runserver serves them
        assert "warlock_sessions.W010" not in ids()


def test_the_api_served_without_drf_installed_is_an_error() -> None:
    """Its browsable pages would be a 500 for want of DRF's templates."""
    apps = [app for app in settings.INSTALLED_APPS if app != "rest_framework"]
    assert "warlock_sessions.E034" not in warlock_check_ids()
    named_by_its_config = [*apps, "rest_framework.apps.RestFrameworkConfig"]
    with override_settings(INSTALLED_APPS=named_by_its_config):
        assert "warlock_sessions.E034" not in warlock_check_ids()
    with override_settings(INSTALLED_APPS=apps):
        assert "warlock_sessions.E034" in warlock_check_ids()
        # A project that serves no API of ours needs no DRF app.
        with override_settings(ROOT_URLCONF="tests.urls_without_api"):
            assert "warlock_sessions.E034" not in warlock_check_ids()


class SessionsDatabaseRouter:
    """Sends the warlock_sessions app to the sessions_db alias."""

    def db_for_read(self, model: type, **hints: object) -> str | None:
        return "sessions_db" if model._meta.app_label == "warlock_sessions" else None

    db_for_write = db_for_read


def test_a_store_database_the_router_does_not_send_the_models_to_is_reported() -> None:
    elsewhere = {"STORE_OPTIONS": {"using": "sessions_db"}}
    with override_settings(WARLOCK_SESSIONS=elsewhere):
        assert warlock_check_ids() == ["warlock_sessions.W003"]
    routed = [f"{__name__}.SessionsDatabaseRouter"]
    with override_settings(WARLOCK_SESSIONS=elsewhere, DATABASE_ROUTERS=routed):
        assert warlock_check_ids() == []
    with override_settings(WARLOCK_SESSIONS={"STORE_OPTIONS": {"using": "default"}}):
        assert warlock_check_ids() == []


def test_a_non_dict_setting_is_reported() -> None:
    with override_settings(WARLOCK_SESSIONS=["STORE"]):
        assert warlock_check_ids() == ["warlock_sessions.E005"]


def test_the_default_store_is_built_once_and_again_after_a_settings_change() -> None:
    from warlock_sessions.stores import MemoryStore, default_store
    from warlock_sessions.testing import session_blob

    with override_settings(WARLOCK_SESSIONS={"STORE": "warlock_sessions.stores.MemoryStore"}):
        store = default_store()
        assert isinstance(store, MemoryStore) and default_store() is store
        default_store().save(session_blob("kept"), 0)
        assert default_store().load("kept") is not None  # a MemoryStore keeps its sessions
    with override_settings(WARLOCK_SESSIONS={"STORE": "warlock_sessions.stores.MemoryStore"}):
        assert default_store() is not store and default_store().load("kept") is None


class Unrelated:
    pass


class HalfAPolicy(SessionPolicy):
    def can_see(self, requester: Any, access: Any) -> bool:
        return True


class SeesLess(OwnerOrStaff):
    """Narrows who may see a session, but lists what OwnerOrStaff lists."""

    def can_see(self, requester: Any, access: Any) -> bool:
        return False


class SeesAndListsLess(SeesLess):
    def visible(self, requester: Any, sessions: Any) -> Any:
        return sessions.none()


def test_a_policy_that_narrows_can_see_but_not_visible_is_warned_about() -> None:
    with override_settings(
        WARLOCK_SESSIONS={"PERMISSION": "tests.test_settings_and_checks.SeesLess"}
    ):
        assert warlock_check_ids() == ["warlock_sessions.W005"]
    with override_settings(
        WARLOCK_SESSIONS={"PERMISSION": "tests.test_settings_and_checks.SeesAndListsLess"}
    ):
        assert warlock_check_ids() == []


@pytest.mark.parametrize(
    ("name", "value", "check_id"),
    [
        ("MAX_CONFLICT_RETRIES", -1, "warlock_sessions.E017"),
        ("LOOP_CONNECTIONS", "4", "warlock_sessions.E017"),
        ("MAX_DELIVERY_ATTEMPTS", 0, "warlock_sessions.E017"),
        ("LEASE_SECONDS", True, "warlock_sessions.E017"),
        ("MAX_WAKE_ATTEMPTS", 2.5, "warlock_sessions.E017"),
        ("POLL_INTERVAL", 0, "warlock_sessions.E017"),
        ("MAX_BODY_BYTES", None, "warlock_sessions.E017"),
        ("MAX_SOCKETS_PER_CLIENT", 0, "warlock_sessions.E017"),
        ("PERMISSION", "myapp.nowhere.Policy", "warlock_sessions.E015"),
        ("PERMISSION", "tests.test_settings_and_checks.Unrelated", "warlock_sessions.E016"),
        ("PERMISSION", "rest_framework.permissions.AllowAny", "warlock_sessions.E016"),
        ("PERMISSION", "warlock_sessions.permissions.SessionPolicy", "warlock_sessions.E016"),
        ("PERMISSION", "tests.test_settings_and_checks.HalfAPolicy", "warlock_sessions.E016"),
        ("AGENTS", ["support"], "warlock_sessions.E018"),
        ("AGENTS", {"support": {"MODEL": "m"}}, "warlock_sessions.E019"),
        ("MODELS", {"m": "gpt"}, "warlock_sessions.E019"),
        ("DEFAULT_AGENT", 3, "warlock_sessions.E019"),
        ("STORE_OPTIONS", "default", "warlock_sessions.E004"),
        ("SNAPSHOT_STORE", "myapp.nowhere.Store", "warlock_sessions.E020"),
        ("SNAPSHOT_STORE", "warlock_sessions.stores.MemoryStore", "warlock_sessions.E021"),
        (
            "CHECKPOINT_STORE",
            "warlock_sessions.snapshots.MemorySnapshotStore",
            "warlock_sessions.E021",
        ),
        ("SNAPSHOT_STORE_OPTIONS", [], "warlock_sessions.E004"),
        ("ORCHESTRATORS", "tests.workflows.test_orchestrator.BOOT", "warlock_sessions.E022"),
        ("ORCHESTRATORS", ["warlock_sessions.conf.DEFAULTS"], "warlock_sessions.E022"),
        ("ORCHESTRATORS", ["myapp.nowhere.orchestrator"], "warlock_sessions.E022"),
        ("CONVERSATION_AGENT", "myapp.nowhere.assistant", "warlock_sessions.E023"),
        ("CONVERSATION_AGENT", "warlock_sessions.conf.DEFAULTS", "warlock_sessions.E023"),
    ],
)
def test_one_rule_per_setting_when_read_and_when_checked(
    name: str, value: object, check_id: str
) -> None:
    """The check reports exactly what reading the setting raises, with the same id."""
    with override_settings(WARLOCK_SESSIONS={name: value}):
        assert warlock_check_ids() == [check_id]
        with pytest.raises(SettingError) as raised:
            getattr(warlock_settings, name)
    assert raised.value.check_id == check_id
    assert isinstance(raised.value, ImproperlyConfigured)
    assert f"WARLOCK_SESSIONS['{name}']" in str(raised.value)


def test_a_store_s_options_must_fit_it() -> None:
    with override_settings(
        WARLOCK_SESSIONS={
            "SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore",
            "SNAPSHOT_STORE_OPTIONS": {"usign": "default"},
            "CHECKPOINT_STORE": "warlock_sessions.checkpoints.MemoryCheckpointStore",
            "CHECKPOINT_STORE_OPTIONS": {"size": 3},
        }
    ):
        assert warlock_check_ids() == ["warlock_sessions.E012", "warlock_sessions.E012"]


def test_the_configured_snapshot_store_is_built_once_and_runs_use_it() -> None:
    from warlock_sessions.snapshots import MemorySnapshotStore, default_snapshot_store
    from warlock_sessions.workflows import Step, Workflow

    assert default_snapshot_store() is None
    with override_settings(
        WARLOCK_SESSIONS={"SNAPSHOT_STORE": "warlock_sessions.snapshots.MemorySnapshotStore"}
    ):
        store = default_snapshot_store()
        assert isinstance(store, MemorySnapshotStore) and default_snapshot_store() is store
        Workflow("wf", [Step("a", run=lambda ctx: 1)]).execute(run_id="r")
        assert store.load("r") is not None
    assert default_snapshot_store() is None


def test_the_conversation_agent_is_built_once_from_its_setting() -> None:
    from warlock_sessions.conversations.configured import (
        conversation_agent as get_conversation_agent,
    )
    from warlock_sessions.errors import AgentNotConfiguredError

    with (
        override_settings(WARLOCK_SESSIONS={}),
        pytest.raises(AgentNotConfiguredError, match="CONVERSATION_AGENT"),
    ):
        get_conversation_agent()
    with override_settings(
        WARLOCK_SESSIONS={"CONVERSATION_AGENT": "tests.conversations.agents.assistant"}
    ):
        assert warlock_check_ids() == []
        assert get_conversation_agent() is get_conversation_agent()
        assert get_conversation_agent().name == "assistant"
    with (
        override_settings(
            WARLOCK_SESSIONS={"CONVERSATION_AGENT": "tests.conversations.agents.DownModel"}
        ),
        pytest.raises(TypeError, match="not a conversation agent"),
    ):
        get_conversation_agent()  # a class, called, gives a model: not an agent


def test_a_component_is_a_class_and_its_options_in_one_place() -> None:
    """``{"CLASS", "OPTIONS"}`` for every component; the older ``<NAME>_OPTIONS`` still works,
    and giving both is refused rather than one silently winning."""
    from warlock_sessions.snapshots import FileSnapshotStore, default_snapshot_store

    with override_settings(
        WARLOCK_SESSIONS={"STORE": {"CLASS": "warlock_sessions.stores.MemoryStore"}}
    ):
        assert warlock_check_ids() == [] and isinstance(default_store(), MemoryStore)
    component = {"CLASS": "warlock_sessions.snapshots.FileSnapshotStore", "OPTIONS": {}}
    with override_settings(WARLOCK_SESSIONS={"SNAPSHOT_STORE": component}):
        assert warlock_check_ids() == ["warlock_sessions.E012"]  # FileSnapshotStore needs one
    component["OPTIONS"] = {"directory": "/tmp/warlock-component"}
    with override_settings(WARLOCK_SESSIONS={"SNAPSHOT_STORE": component}):
        assert warlock_check_ids() == []
        built = default_snapshot_store()
        assert isinstance(built, FileSnapshotStore) and default_snapshot_store() is built
    both = {"SNAPSHOT_STORE": component, "SNAPSHOT_STORE_OPTIONS": {"directory": "/tmp/y"}}
    with override_settings(WARLOCK_SESSIONS=both):
        assert warlock_check_ids() == ["warlock_sessions.E004"]
        with pytest.raises(SettingError, match="set too"):
            default_snapshot_store()
    for wrong in ({"CLAS": "x"}, {"CLASS": "warlock_sessions.stores.MemoryStore", "OPTS": {}}):
        with override_settings(WARLOCK_SESSIONS={"STORE": wrong}):
            assert warlock_check_ids() == ["warlock_sessions.E004"]


def test_a_conversation_lock_missing_its_server_is_reported_at_start_up() -> None:
    """It was built with no arguments on the first request (``TypeError: missing
    'conninfo'``); now its options are bound to its signature by the checks."""
    from warlock_sessions.conversations.configured import conversation_lock
    from warlock_sessions.locks import RedisLock

    advisory = "warlock_sessions.locks.PostgresAdvisoryLock"
    with override_settings(WARLOCK_SESSIONS={"CONVERSATION_LOCK": advisory}):
        assert warlock_check_ids() == ["warlock_sessions.E012"]
        with pytest.raises(SettingError, match="missing a required argument: 'connection'"):
            conversation_lock()
    redis_lock = {
        "CLASS": "warlock_sessions.locks.RedisLock",
        "OPTIONS": {"url": "redis://127.0.0.1:6379/0", "prefix": "app:lock:"},
    }
    with override_settings(WARLOCK_SESSIONS={"CONVERSATION_LOCK": redis_lock}):
        assert warlock_check_ids() == []
        lock = conversation_lock()
        assert isinstance(lock, RedisLock) and lock.key("c") == "app:lock:c"
        assert lock.timeout == warlock_settings.LOCK_TIMEOUT and conversation_lock() is lock


POOLED = {"ENGINE": "django.db.backends.postgresql", "HOST": "pgbouncer", "PORT": 6432}


@pytest.mark.parametrize(
    ("database", "lock", "said"),
    [
        (POOLED, None, ["prepares statements", "server-side cursors"]),
        (
            {
                **POOLED,
                "OPTIONS": {"server_side_binding": True, "assume_role": "app"},
            },
            None,
            ["server-side binding", "SET ROLE"],
        ),
        (
            {
                **POOLED,
                "PORT": 5432,
                "DISABLE_SERVER_SIDE_CURSORS": True,
                "OPTIONS": {"prepare_threshold": None},
            },
            "warlock_sessions.locks.PostgresAdvisoryLock",
            ["session-level lock"],
        ),
    ],
    ids=["defaults", "binding", "advisory-lock"],
)
def test_a_database_behind_pgbouncer_is_warned_of_what_breaks_there(
    monkeypatch: pytest.MonkeyPatch, database: dict[str, Any], lock: str | None, said: list[str]
) -> None:
    from django.conf import settings

    from warlock_sessions.checks import check_transaction_pooler

    monkeypatch.setitem(settings.DATABASES, "pooled", database)
    options = {"CONVERSATION_LOCK": lock, "CONVERSATION_LOCK_OPTIONS": {"connection": "x"}}
    with override_settings(WARLOCK_SESSIONS=options if lock else {}):
        [warning] = check_transaction_pooler()
    assert warning.id == "warlock_sessions.W006" and "DATABASES['pooled']" in warning.msg
    assert all(words in warning.msg for words in said), warning.msg


def test_a_database_set_up_for_pgbouncer_is_not_warned(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.conf import settings

    from warlock_sessions.checks import check_transaction_pooler

    ready = {**POOLED, "DISABLE_SERVER_SIDE_CURSORS": True, "OPTIONS": {"prepare_threshold": None}}
    monkeypatch.setitem(settings.DATABASES, "pooled", ready)
    assert check_transaction_pooler() == []
    assert "warlock_sessions.W006" not in warlock_check_ids()


def test_a_misspelt_setting_is_named_by_the_one_meant() -> None:
    with override_settings(WARLOCK_SESSIONS={"AGENT": "myapp.agents.booking"}):
        found = [m for m in checks.run_checks() if m.id == "warlock_sessions.W001"]
    assert [m.hint for m in found] == ["Did you mean 'AGENTS'?"]
    with override_settings(WARLOCK_SESSIONS={"ZZZZ": 1}):
        found = [m for m in checks.run_checks() if m.id == "warlock_sessions.W001"]
    assert found[0].hint.startswith("Known settings: AGENTS, ")
