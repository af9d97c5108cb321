"""The chat page: one conversation per browser (Django session), over the session websocket."""

from uuid import uuid4

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from warlock_sessions.permissions import anonymous_key


@ensure_csrf_cookie
def chat(request: HttpRequest) -> HttpResponse:
    # The Django session is what makes an anonymous visitor the owner of their conversation.
    chat_id = request.session.setdefault("chat_id", f"chat-{uuid4().hex[:12]}")
    anonymous_key(request, create=True)  # saves the session: every tab shares this identity
    return render(request, "demo/chat.html", {"chat_id": chat_id})
