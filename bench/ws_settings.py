"""Settings of the daphne process bench/ws.py starts (from the environment it is given)."""

import os

from example_project.databases import asgi_postgres_settings

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
    "bench.peer",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "warlock_sessions.api.urls"
DATABASES = {"default": asgi_postgres_settings(os.environ["WARLOCK_BENCH_DATABASE_URL"])}
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
from bench.common import ECHO_AGENTS  # noqa: E402

# Every chat of the benchmark comes from one address: the per-address budget of new visitors
# (100 an hour) would refuse all but the first hundred of its new visitors.
WARLOCK_SESSIONS = {**ECHO_AGENTS, "MAX_NEW_VISITORS_PER_ADDRESS": None}
