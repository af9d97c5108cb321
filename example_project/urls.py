from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from example_project.demo.views import assistant, chat, helper

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask every page's site for it, the admin's included.
    path("favicon.ico", RedirectView.as_view(url=static("demo/favicon.svg"), permanent=True)),
    path("api/", include("warlock_sessions.api.urls")),
    path("", include("warlock_sessions.api.health")),  # /healthz and /readyz
    path("assistant/", assistant, name="assistant-home"),
    path("assistant/<str:conversation_id>/", assistant, name="assistant"),
    path("helper/", helper, name="helper"),
    path("", chat, name="chat"),
]
