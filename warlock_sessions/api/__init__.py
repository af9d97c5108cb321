"""The HTTP API (Django REST framework): ``path("api/", include("warlock_sessions.api.urls"))``."""
