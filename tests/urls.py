from django.contrib import admin
from django.urls import include, path

from example_project.demo.views import chat

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("warlock_sessions.api.urls")),
    path("", chat, name="chat"),
]
