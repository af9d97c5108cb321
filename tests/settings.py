"""Test settings: SQLite by default, plus a ``postgres`` alias when PostgreSQL answers."""

import os
import tempfile

from tests import pgvector
from tests.services import postgres_database_settings, postgres_unreachable

SECRET_KEY = "tests"
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "warlock_sessions",
    "example_project.demo",
]
STATIC_URL = "static/"
ASGI_APPLICATION = "example_project.asgi.application"
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# No proxy in front of the test client and servers: a client's address is REMOTE_ADDR.
REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema", "NUM_PROXIES": 0}
MIDDLEWARE = [
    "warlock_sessions.api.middleware.ServiceUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.urls"
TEMPLATES = [
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
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": ":memory:",
        # A file, not memory: tests that fork worker processes need them to see the same data.
        "TEST": {
            "NAME": os.path.join(tempfile.gettempdir(), f"warlock-tests-{os.getpid()}.sqlite3")
        },
    },
}
if postgres_unreachable() is None:
    DATABASES["postgres"] = postgres_database_settings()  # type: ignore[assignment]
    # A read replica of it, as READ_REPLICA names one: the same test database, its own
    # connections (tests/test_read_replica.py).
    replica: dict[str, object] = {**postgres_database_settings(), "TEST": {"MIRROR": "postgres"}}
    DATABASES["replica"] = replica  # type: ignore[assignment]
if pgvector.available():
    # PostgreSQL with pgvector, for PgVectorCacheStore: a server of the test process's own,
    # started when a test first asks for this alias (tests/pgvector.py).
    DATABASES["pgvector"] = pgvector.alias_settings()
# Tests create users and the fuzz test sends generated Basic credentials: a fast hasher keeps
# each from costing a PBKDF2 run.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
