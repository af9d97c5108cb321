"""Settings of the example project: SQLite, the in-memory channel layer and the offline
RuleModel by default, so it needs no services. DATABASE_URL (postgresql://…) and REDIS_URL
(redis://…) switch to PostgreSQL and the channels-redis layer."""

import os
from pathlib import Path

from example_project.databases import asgi_postgres_settings

BASE_DIR = Path(__file__).resolve().parent.parent

# A demo only: never reuse this key or DEBUG in production. DEBUG=0 in the environment runs it
# as docs/deployment.md deploys it (static files collected to STATIC_ROOT, served by WhiteNoise).
SECRET_KEY = "warlock-sessions-example-project-not-secret"
DEBUG = os.environ.get("DEBUG", "1") != "0"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "daphne",  # runserver serves ASGI, websockets included
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "warlock_sessions",
    "example_project.demo",
]

MIDDLEWARE = [
    # First: an outage anywhere in a request is a 503 with Retry-After, never a 500 page.
    "warlock_sessions.api.middleware.ServiceUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # The admin's styles, flow graph and live hand-over script from the app server itself:
    # with DEBUG off, nothing else in Django serves /static/ (check warlock_sessions.W010).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "example_project.wsgi.application"
ASGI_APPLICATION = "example_project.asgi.application"


DATABASES = {
    "default": asgi_postgres_settings(os.environ["DATABASE_URL"])
    if os.environ.get("DATABASE_URL")
    else {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "demo.sqlite3"}
}

# The pub/sub layer of channels-redis: of the Redis layers it held 200 sockets in the
# measurements of issue 6, where the classic layer failed; one process needs no Redis at all.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [os.environ["REDIS_URL"]]},
    }
    if os.environ.get("REDIS_URL")
    else {"BACKEND": "channels.layers.InMemoryChannelLayer"}
}

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # The demo is served directly: a client's address is the connection's. Behind a proxy,
    # the number of proxies (docs/deployment.md; check W009).
    "NUM_PROXIES": 0,
    # The browser pages use the session cookie; curl and scripts a token (or Basic).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
}

#: The booking assistant runs on the offline RuleModel, or on any OpenAI-compatible server
#: named by the environment (docs/providers.md, "Pointing the demo at a server"):
#: LLM_BASE_URL=http://127.0.0.1:8080/v1 LLM_MODEL=gemma make demo
LLM_MODELS = (
    {
        "llm": {
            "BASE_URL": os.environ["LLM_BASE_URL"],
            "MODEL": os.environ.get("LLM_MODEL", "default"),
            "API_KEY_ENV": "LLM_API_KEY",
            "OPTIONS": {
                "structured_output": os.environ.get("LLM_STRUCTURED_OUTPUT", "json_schema"),
                "timeout": float(os.environ.get("LLM_TIMEOUT", "30")),
            },
        }
    }
    if os.environ.get("LLM_BASE_URL")
    else {}
)

WARLOCK_SESSIONS = {
    "STORE": "warlock_sessions.stores.DjangoStore",
    "MODELS": LLM_MODELS,
    "AGENTS": {
        "booking": {"AGENT": "example_project.demo.agents.booking_agent", "MODEL": "llm"}
        if LLM_MODELS
        else "example_project.demo.agents.booking_agent",
        # The shop helper of /helper/, written with the OpenAI Agents SDK (offline model).
        "helper": "example_project.demo.helper.helper_agent",
    },
    "DEFAULT_AGENT": "booking",
    # Workflow runs keep their snapshots in the database (the admin shows them).
    "SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore",
    # The free-form assistant of /assistant/ and /api/conversations/ (offline, with tools).
    "CONVERSATION_AGENT": "example_project.demo.assistant.assistant",
}

# Libraries that log every failed attempt while a service is away (the Redis layer once a
# second, psycopg_pool each reconnection) log each message at most once a minute.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"outages": {"()": "warlock_sessions.backends.outages.RepeatFilter"}},
    "handlers": {"outages": {"class": "logging.StreamHandler", "filters": ["outages"]}},
    "loggers": {
        name: {"handlers": ["outages"], "level": "WARNING", "propagate": False}
        for name in ("channels_redis", "psycopg.pool")
    },
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
# Where `manage.py collectstatic` puts every app's static files for WhiteNoise to serve.
STATIC_ROOT = os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
