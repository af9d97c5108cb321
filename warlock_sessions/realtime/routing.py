"""Compose into your ASGI application, as the Channels tutorial does, with this app's
``SameOriginValidator`` where the tutorial has ``AllowedHostsOriginValidator`` (which lets a
page on any host in ``ALLOWED_HOSTS`` open a socket with another host's cookies)::

application = ProtocolTypeRouter({
    "http": get_asgi_application(),
    "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})
"""

from django.urls import re_path

from .conversations import ConversationConsumer
from .sessions import SessionConsumer
from .shutdown import close_sockets_when_daphne_stops

websocket_urlpatterns = [
    # Channels' URLRouter takes ASGI applications where Django's stubs expect views.
    re_path(r"^ws/sessions/(?P<session_id>[^/]+)/$", SessionConsumer.as_asgi()),  # type: ignore[arg-type]
    re_path(
        r"^ws/conversations/(?P<conversation_id>[^/]+)/$",
        ConversationConsumer.as_asgi(),  # type: ignore[arg-type]
    ),
]

close_sockets_when_daphne_stops()
