"""The Channels tutorial's ``ChatConsumer``, made durable: each message saved as a row, then
sent to every member of the room through the channel layer, one frame each."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from .models import Message


class ChatConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.room = self.scope["url_route"]["kwargs"]["room"]
        self.group = f"chat_{self.room}"
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        message = await database_sync_to_async(Message.objects.create)(
            room=self.room, text=str(content.get("text", ""))
        )
        await self.channel_layer.group_send(
            self.group,
            {
                "type": "chat.message",
                "id": message.pk,
                "text": message.text,
                "client_id": content.get("id"),
            },
        )

    async def chat_message(self, event: dict[str, Any]) -> None:
        await self.send_json(
            {"id": event["id"], "text": event["text"], "client_id": event["client_id"]}
        )
