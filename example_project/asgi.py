"""The example project over ASGI: Django for HTTP, the session websockets for ws://."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")
django_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs the apps loaded)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from warlock_sessions.realtime.middleware import (  # noqa: E402
    HandshakeOutageGuard,
    SameOriginValidator,
)
from warlock_sessions.realtime.routing import websocket_urlpatterns  # noqa: E402
from warlock_sessions.realtime.sessions import SessionConsumer  # noqa: E402

#: The shop helper written with the OpenAI Agents SDK (/helper/) has a route of its own: its
#: turns run the ``helper`` agent.
helper_route = re_path(
    r"^ws/helper/(?P<session_id>[^/]+)/$",
    SessionConsumer.as_asgi(agent="helper"),  # type: ignore[arg-type]
)

application = ProtocolTypeRouter(
    {
        "http": django_application,
        # A handshake that meets a database outage closes with 1013, not an HTTP 500.
        "websocket": SameOriginValidator(
            HandshakeOutageGuard(
                AuthMiddlewareStack(URLRouter([helper_route, *websocket_urlpatterns]))
            )
        ),
    }
)
