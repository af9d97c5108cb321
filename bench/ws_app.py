"""The ASGI application bench/ws.py serves with daphne: our session socket, a bare echo
consumer on the same channel layer (the transport's floor), and the HTTP API."""

from __future__ import annotations

import os
import uuid
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.ws_settings")

from channels.auth import AuthMiddlewareStack
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.routing import ProtocolTypeRouter, URLRouter
from django.core.asgi import get_asgi_application
from django.urls import re_path

http = get_asgi_application()

from bench.peer.consumers import ChatConsumer  # noqa: E402
from warlock_sessions.realtime.routing import websocket_urlpatterns  # noqa: E402


class EchoConsumer(AsyncJsonWebsocketConsumer):
    """Answers each message through group_send, as a bare Channels chat does."""

    async def connect(self) -> None:
        self.group = f"echo_{uuid.uuid4().hex}"
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        await self.channel_layer.group_send(self.group, {"type": "echo.reply", "content": content})

    async def echo_reply(self, message: dict[str, Any]) -> None:
        await self.send_json(message["content"])


application = ProtocolTypeRouter(
    {
        "http": http,
        "websocket": AuthMiddlewareStack(
            URLRouter(
                [
                    *websocket_urlpatterns,
                    re_path(r"^ws/echo/$", EchoConsumer.as_asgi()),
                    re_path(r"^ws/chat/(?P<room>[\w-]+)/$", ChatConsumer.as_asgi()),
                ]
            )
        ),
    }
)
