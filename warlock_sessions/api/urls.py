"""``path("api/", include("warlock_sessions.api.urls"))``: the sessions endpoints, and, when
drf-spectacular (the ``openapi`` extra) is installed, the OpenAPI schema at ``schema/`` with
Swagger UI at ``schema/swagger/`` and Redoc at ``schema/redoc/``."""

from importlib.util import find_spec
from typing import Any

from django.apps import apps
from django.http import HttpRequest, JsonResponse
from django.urls import NoReverseMatch, URLPattern, URLResolver, include, path, re_path, reverse
from rest_framework.routers import DefaultRouter

from .conversations import ConversationViewSet
from .sessions import SessionViewSet
from .snapshots import SnapshotViewSet


class WarlockRouter(DefaultRouter):
    """The API's root lists every endpoint: the lists, the conversations (which have no list:
    each is read by its id) and, when installed, the schema and its two readers."""

    def get_api_root_view(self, api_urls: Any = None) -> Any:
        view = super().get_api_root_view(api_urls)

        def root(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            response = view(request, *args, **kwargs)
            if isinstance(getattr(response, "data", None), dict):
                base = request.build_absolute_uri(request.path)
                response.data["conversations"] = f"{base}conversations/{{id}}/"
                for name, url_name in (
                    ("schema", "warlock-schema"),
                    ("swagger", "warlock-swagger"),
                    ("redoc", "warlock-redoc"),
                ):
                    try:
                        response.data[name] = request.build_absolute_uri(reverse(url_name))
                    except NoReverseMatch:  # drf-spectacular is not installed
                        continue
            return response

        return root


router = WarlockRouter()
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


# The schema's pages need drf-spectacular's templates: they are served when the project lists
# "drf_spectacular" in INSTALLED_APPS (the views carry its AutoSchema themselves).
if find_spec("drf_spectacular") is not None and apps.is_installed("drf_spectacular"):
    from drf_spectacular.settings import patched_settings
    from drf_spectacular.utils import extend_schema
    from drf_spectacular.views import (
        SpectacularAPIView,
        SpectacularRedocView,
        SpectacularSwaggerView,
    )

    from .. import __version__

    def offline_assets() -> dict[str, str]:
        """Swagger UI's and Redoc's scripts from ``drf_spectacular_sidecar`` when the project
        installed it (the ``openapi`` extra does; it must be in ``INSTALLED_APPS``), else
        from their CDN, as drf-spectacular does by default."""
        if not apps.is_installed("drf_spectacular_sidecar"):
            return {}
        return {
            "SWAGGER_UI_DIST": "SIDECAR",
            "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
            "REDOC_DIST": "SIDECAR",
        }

    class SwaggerView(SpectacularSwaggerView):
        @extend_schema(exclude=True)  # a page about the API, not part of it
        def get(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            with patched_settings(offline_assets()):
                return super().get(request, *args, **kwargs)  # type: ignore[no-untyped-call]

    class RedocView(SpectacularRedocView):
        @extend_schema(exclude=True)
        def get(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            with patched_settings(offline_assets()):
                return super().get(request, *args, **kwargs)  # type: ignore[no-untyped-call]

    urlpatterns += [
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
        ),
        path(
            "schema/swagger/",
            SwaggerView.as_view(url_name="warlock-schema", title="warlock_sessions API"),
            name="warlock-swagger",
        ),
        path(
            "schema/redoc/",
            RedocView.as_view(url_name="warlock-schema", title="warlock_sessions API"),
            name="warlock-redoc",
        ),
    ]

# Last: what no pattern above matched.
urlpatterns.append(re_path(r"^(?P<rest>.*)$", not_found))
