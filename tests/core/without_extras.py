"""The core without extras: installed with plain ``pip install warlock-sessions`` (Django and DRF
only), the package imports, passes its checks, runs turns on SQLite with the offline
RuleModel and answers the HTTP API. Run by ``make test-core`` in a virtualenv of its own;
not a pytest module, because the test environment has every extra installed.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

import django
from django.conf import settings

OPTIONAL = ("channels", "httpx", "psycopg", "redis", "factory", "drf_spectacular", "daphne")

installed = [name for name in OPTIONAL if importlib.util.find_spec(name) is not None]
assert not installed, f"this check needs an environment without extras, found {installed}"

settings.configure(
    SECRET_KEY="core",
    USE_TZ=True,
    INSTALLED_APPS=[
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
        "rest_framework",
        "warlock_sessions",
    ],
    MIDDLEWARE=[
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
    ],
    TEMPLATES=[
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "APP_DIRS": True,
            "OPTIONS": {
                "context_processors": [
                    "django.template.context_processors.request",
                    "django.contrib.auth.context_processors.auth",
                    "django.contrib.messages.context_processors.messages",
                ]
            },
        }
    ],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(Path(tempfile.mkdtemp()) / "core.sqlite3"),
        }
    },
    ROOT_URLCONF="warlock_sessions.api.urls",
    WARLOCK_SESSIONS={"AGENTS": {"greeter": "__main__.greeter"}},
)
django.setup()

from django.core.management import call_command  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from warlock_sessions.engine import Agent  # noqa: E402
from warlock_sessions.host import Host, run_due_wakes  # noqa: E402
from warlock_sessions.providers import RuleModel  # noqa: E402

greeter = Agent(
    name="greeter",
    fields={"name": {"type": "string", "format": "name", "ask": "What's your name?"}},
    flows=[
        {
            "id": "hello",
            "on": [{"message": ["hello", "hi"]}],
            "steps": [
                {"id": "ask", "collect": ["name"]},
                {"id": "thanks", "say": "Nice to meet you, {{data.name|there}}."},
            ],
        }
    ],
    model=RuleModel(),
)

call_command("migrate", verbosity=0)
call_command("check", fail_level="WARNING")
# The database's checks too, as `manage.py migrate` runs them (call_command skips them).
call_command("check", databases=["default"], fail_level="WARNING")

host = Host("greeter")
first = host.handle("s1", {"message": {"text": "hi", "id": "m1"}})
second = host.handle("s1", {"message": {"text": "Ana", "id": "m2"}})
assert [m["text"] for m in first.messages] == ["What's your name?"], first.messages
assert [m["text"] for m in second.messages] == ["Nice to meet you, Ana."], second.messages
assert second.session["version"] == 2
run_due_wakes()

client = APIClient()
reply = client.post("/sessions/api-1/turn/", {"message": {"text": "hello", "id": "a1"}}, "json")
assert reply.status_code == 200, reply.content
assert reply.json()["messages"][0]["text"] == "What's your name?"
assert client.get("/sessions/api-1/").status_code == 200
assert client.get("/sessions/s1/").status_code == 404  # not this visitor's

try:
    from warlock_sessions.providers import OpenAICompatibleModel  # noqa: F401
except ImportError as error:
    assert "httpx" in str(error), error
else:
    raise AssertionError("OpenAICompatibleModel imported without httpx")

print("the core works without extras:", sys.version.split()[0], "Django", django.__version__)
