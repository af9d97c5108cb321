"""The URLs bench/scale.py requests: the sessions API and the admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("warlock_sessions.api.urls")),
]
