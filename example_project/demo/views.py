"""The demo pages: the booking chat (one per browser, over the session websocket), the shop
helper written with the OpenAI Agents SDK (the same page and socket, its own route) and the
free-form assistant (conversations over their websocket and API)."""

from uuid import uuid4

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie

from warlock_sessions.models import Conversation
from warlock_sessions.permissions import anonymous_key


@ensure_csrf_cookie
def chat(request: HttpRequest) -> HttpResponse:
    # The Django session is what makes an anonymous visitor the owner of their conversation.
    chat_id = request.session.setdefault("chat_id", f"chat-{uuid4().hex[:12]}")
    anonymous_key(request, create=True)  # saves the session: every tab shares this identity
    return render(request, "demo/chat.html", {"chat_id": chat_id})


@ensure_csrf_cookie
def helper(request: HttpRequest) -> HttpResponse:
    """The shop helper written with the OpenAI Agents SDK, over its own session socket route
    (``ws/helper/``, whose turns run the ``helper`` agent): the same chat page, log, admin
    inbox and hand-over to a person as the booking chat's."""
    chat_id = request.session.setdefault("helper_id", f"helper-{uuid4().hex[:12]}")
    anonymous_key(request, create=True)
    return render(
        request,
        "demo/chat.html",
        {
            "chat_id": chat_id,
            "socket": "helper",
            "title": "Shop helper (OpenAI Agents SDK)",
            "placeholder": "Ask for the menu",
        },
    )


@ensure_csrf_cookie
def assistant(request: HttpRequest, conversation_id: str | None = None) -> HttpResponse:
    """The assistant page of a conversation (``/assistant/`` goes to this browser's own)."""
    anonymous_key(request, create=True)  # the visitor's identity owns what they start
    if conversation_id is None:
        own = request.session.setdefault("assistant_id", f"talk-{uuid4().hex[:12]}")
        return redirect("assistant", conversation_id=own)
    # A conversation nobody has written to yet has no history to read: the page does not
    # ask for it (the API would answer 404, which the browser logs as an error).
    started = Conversation.objects.filter(id=conversation_id).exists()
    return render(
        request,
        "demo/assistant.html",
        {"conversation_id": conversation_id, "started": started},
    )
