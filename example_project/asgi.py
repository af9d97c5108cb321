"""The example project over ASGI: Django for HTTP, the session websockets for ws://."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")
django_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs the apps loaded)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from warlock_sessions.realtime.middleware import (  # noqa: E402
    HandshakeOutageGuard,
    SameOriginValidator,
)
from warlock_sessions.realtime.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_application,
        # A handshake that meets a database outage closes with 1013, not an HTTP 500.
        "websocket": SameOriginValidator(
            HandshakeOutageGuard(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
        ),
    }
)
