from django.contrib import admin
from django.urls import include, path

from example_project.demo.views import assistant, chat, helper

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("warlock_sessions.api.urls")),
    path("", include("warlock_sessions.api.health")),
    path("assistant/", assistant, name="assistant-home"),
    path("assistant/<str:conversation_id>/", assistant, name="assistant"),
    path("helper/", helper, name="helper"),
    path("", chat, name="chat"),
]
