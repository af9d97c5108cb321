"""Settings of the daphne process bench/ws.py starts (from the environment it is given)."""

import os

from psycopg.conninfo import conninfo_to_dict

_db = conninfo_to_dict(os.environ["WARLOCK_BENCH_DATABASE_URL"])
SECRET_KEY = "bench"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "rest_framework",
    "warlock_sessions",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "warlock_sessions.api.urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db["dbname"],
        "USER": _db.get("user", ""),
        "PASSWORD": _db.get("password", ""),
        "HOST": _db.get("host", ""),
        "PORT": str(_db.get("port", "")),
        # Under ASGI sync work runs in threads that come and go: pool the connections, never
        # keep one per thread (CONN_MAX_AGE), or PostgreSQL runs out ("too many clients").
        "CONN_MAX_AGE": 0,
        "OPTIONS": {"pool": {"min_size": 2, "max_size": 16}, "prepare_threshold": 5},
    }
}
CHANNEL_LAYERS = {
    "default": (
        {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [os.environ.get("WARLOCK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")]
            },
        }
        if os.environ.get("WARLOCK_BENCH_LAYER") == "redis"
        else {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    )
}
WARLOCK_SESSIONS = {"AGENTS": {"echo": "bench.ws_app.echo_agent"}, "DEFAULT_AGENT": "echo"}
