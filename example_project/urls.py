from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("warlock_sessions.api.urls")),
    path("", RedirectView.as_view(url="/admin/warlock_sessions/session/", permanent=False)),
]
