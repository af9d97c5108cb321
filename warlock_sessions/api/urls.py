"""``path("api/", include("warlock_sessions.api.urls"))``: the sessions endpoints, and the
OpenAPI schema at ``schema/`` when drf-spectacular (the ``openapi`` extra) is installed."""

from importlib.util import find_spec

from django.http import HttpRequest, JsonResponse
from django.urls import URLPattern, URLResolver, include, path, re_path
from rest_framework.routers import DefaultRouter

from .conversations import ConversationViewSet
from .sessions import SessionViewSet
from .snapshots import SnapshotViewSet

router = DefaultRouter()
router.include_format_suffixes = False  # a session id or snapshot key may end in ".json"
router.register("sessions", SessionViewSet, basename="warlock-session")
router.register("snapshots", SnapshotViewSet, basename="warlock-snapshot")
router.register("conversations", ConversationViewSet, basename="warlock-conversation")

urlpatterns: list[URLPattern | URLResolver] = [path("", include(router.urls))]


def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Any other path under the API: JSON, as every answer of the API is."""
    return JsonResponse(
        {"code": "not-found", "detail": f"There is no API endpoint {request.path!r}."},
        status=404,
    )


if find_spec("drf_spectacular") is not None:
    from drf_spectacular.views import SpectacularAPIView

    from .. import __version__

    urlpatterns.append(
        path(
            "schema/",
            SpectacularAPIView.as_view(
                custom_settings={
                    "TITLE": "warlock_sessions API",
                    "VERSION": __version__,
                    "DESCRIPTION": "Durable conversation state for chatbots and AI agents: "
                    "sessions and their turns, conversations with an agent, run snapshots. "
                    "Every error is JSON with a stable code. See docs/api.md.",
                }
            ),
            name="warlock-schema",
        )
    )

# Last: what no pattern above matched.
urlpatterns.append(re_path(r"^(?P<rest>.*)$", not_found))
