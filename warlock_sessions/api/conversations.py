"""``/api/conversations/{id}/``: conversation sessions over HTTP (docs/api.md), kept by the
row store and talking to ``WARLOCK_SESSIONS["CONVERSATION_AGENT"]``. The same policy as
sessions decides who may do what; an end user sends text only."""

from __future__ import annotations

from uuid import uuid4

from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from ..conversations import ConversationSession, DjangoConversationStore
from ..conversations.configured import conversation_agent, conversation_store, open_conversation
from ..conversations.wire import (
    conversation_json,
    fork_input,
    result_json,
    run_failure,
    send_input,
    truncate_input,
)
from ..host.notify import conversation_changed
from ..models import Conversation
from ..permissions import SessionAccess, owner_fields
from . import schema
from .base import PolicyViewSet
from .errors import ApiError


def conversation_not_found(conversation_id: str) -> ApiError:
    return ApiError(404, "conversation-not-found", f'There is no conversation "{conversation_id}".')


class ConversationViewSet(PolicyViewSet):
    lookup_url_kwarg = "conversation_id"

    # -- access -------------------------------------------------------------------------------

    def open(
        self, request: Request, conversation_id: str, *, creates: bool = False
    ) -> tuple[ConversationSession, DjangoConversationStore]:
        """The conversation as this requester may use it for the view's action: 404 unless
        they may see it, 403 for an action they may not do. For an action that ``creates``
        conversations (a send, a fork), what it creates is the requester's, and a send to an
        id nobody uses makes it theirs first."""
        store = conversation_store(owner_fields(request) if creates else None)
        header = store.header(conversation_id)
        if header is None and self.action == "send":
            header = store.claim(conversation_id)
        access = SessionAccess(conversation_id, header, model="conversation")
        if access.owner is None or not self.policy().can_see(request, access):
            raise conversation_not_found(conversation_id)
        self.check_object_permissions(request, access)
        return open_conversation(conversation_id, store), store

    @staticmethod
    def header(store: DjangoConversationStore, conversation_id: str) -> Conversation:
        header = store.header(conversation_id)
        if header is None:  # deleted meanwhile
            raise conversation_not_found(conversation_id)
        return header

    # -- endpoints ----------------------------------------------------------------------------

    @schema.CONVERSATION_RETRIEVE
    def retrieve(self, request: Request, conversation_id: str) -> Response:
        _chat, store = self.open(request, conversation_id)
        return Response(conversation_json(self.header(store, conversation_id)))

    @schema.CONVERSATION_HISTORY
    @action(detail=True, methods=["get"])
    def history(self, request: Request, conversation_id: str) -> Response:
        chat, _store = self.open(request, conversation_id)
        return Response({"id": conversation_id, "messages": chat.history()})

    @schema.CONVERSATION_SEND
    @action(detail=True, methods=["post"])
    def send(self, request: Request, conversation_id: str) -> Response:
        text = send_input(request.data)
        conversation_agent()  # configured, before anything is claimed
        chat, store = self.open(request, conversation_id, creates=True)
        result = chat.send(text)
        if result.error is not None:
            raise run_failure(result.error)
        conversation_changed(conversation_id)
        return Response(result_json(result, store.header(conversation_id)))

    @schema.CONVERSATION_RESUME
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, conversation_id: str) -> Response:
        chat, store = self.open(request, conversation_id)
        result = chat.resume()
        if result is None:
            header = self.header(store, conversation_id)
            return Response({"resumed": False, "conversation": conversation_json(header)})
        if result.error is not None:
            raise run_failure(result.error)
        conversation_changed(conversation_id)
        return Response({"resumed": True, **result_json(result, store.header(conversation_id))})

    @schema.CONVERSATION_FORK
    @action(detail=True, methods=["post"])
    def fork(self, request: Request, conversation_id: str) -> Response:
        target, count = fork_input(request.data)
        # Without a target the server names the fork: an id nobody can guess, and no 409
        # telling whether someone else's conversation holds a chosen one.
        target = target or uuid4().hex
        chat, store = self.open(request, conversation_id, creates=True)
        chat.fork(target, count)
        return Response(
            conversation_json(self.header(store, target)), status=status.HTTP_201_CREATED
        )

    @schema.CONVERSATION_TRUNCATE
    @action(detail=True, methods=["post"])
    def truncate(self, request: Request, conversation_id: str) -> Response:
        count = truncate_input(request.data)
        chat, store = self.open(request, conversation_id)
        chat.truncate(count)
        conversation_changed(conversation_id)
        return Response(conversation_json(self.header(store, conversation_id)))

    @schema.CONVERSATION_DESTROY
    def destroy(self, request: Request, conversation_id: str) -> Response:
        chat, _store = self.open(request, conversation_id)
        chat.clear()
        conversation_changed(conversation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
