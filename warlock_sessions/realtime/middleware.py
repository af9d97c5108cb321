"""The websocket stack's guards: ``SameOriginValidator`` (a socket opens only from a page of its
own site) and ``HandshakeOutageGuard`` (a handshake that meets an outage closes with 1013).

``HandshakeOutageGuard``: a websocket whose handshake meets an outage is accepted and closed
with 1013 (try again later), never a failed handshake (an HTTP 500).

Channels' ``AuthMiddlewareStack`` reads the visitor's Django session and user from the
database before any consumer runs; while the database is away that raises, and the server
fails the handshake with a 500, which a browser sees as a network error. Wrap the stack::

    "websocket": SameOriginValidator(
        HandshakeOutageGuard(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    )

``SameOriginValidator``: browsers send a site's cookies with a websocket that any page opens,
and refuse a page nothing for a socket; Django's CSRF check does not see sockets. Channels'
``AllowedHostsOriginValidator`` admits any ``Origin`` in ``ALLOWED_HOSTS``, and with
``ALLOWED_HOSTS = [".chat.example.com"]`` (tenants by subdomain) a page on
``globex.chat.example.com`` opened ``acme.chat.example.com``'s sockets with acme's cookies.
This validator asks what Django's CSRF check asks of a form: the ``Origin`` is the socket's own
host, on https when the socket is secure (``wss``, or ``SECURE_PROXY_SSL_HEADER`` behind a
proxy that ends TLS; a socket the server cannot tell is secure takes either), or one of
``CSRF_TRUSTED_ORIGINS`` (``https://*.example.com`` included). Anything else, or no
``Origin`` at all, is refused before the handshake completes.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.utils.http import is_same_domain

from ..backends.outages import unavailable
from ..tenancy import scope_headers, scope_host
from .base import TRY_AGAIN_LATER, close_codes
from .frames import frame_outage

logger = logging.getLogger("warlock_sessions.realtime")

DEFAULT_PORTS = {"http": ":80", "https": ":443"}


class SameOriginValidator:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if scope.get("type") != "websocket" or same_origin(scope):
            return await self.inner(scope, receive, send)
        logger.warning(
            "a socket from origin %r to host %r was refused: not the same origin, nor one of "
            "CSRF_TRUSTED_ORIGINS",
            scope_headers(scope).get(b"origin"),
            scope_headers(scope).get(b"host"),
        )
        return await WebsocketDenier()(scope, receive, send)


def same_origin(scope: Any) -> bool:
    """Whether a socket's ``Origin`` is its own host's, or one ``CSRF_TRUSTED_ORIGINS`` names,
    as Django's ``CsrfViewMiddleware`` decides for a form."""
    origin = scope_headers(scope).get(b"origin")
    if not origin:
        return False
    try:
        parts = urlsplit(origin)
        netloc = parts.netloc.lower()
    except ValueError:
        return False
    if parts.scheme not in DEFAULT_PORTS or not netloc or "@" in netloc:
        return False
    host = scope_host(scope)
    default = DEFAULT_PORTS[parts.scheme]
    if host and netloc.removesuffix(default) == host.removesuffix(default):
        # A page on plain http never opens a socket the server knows is secure: its cookies
        # are the secure site's (Django's CSRF check asks the same of a form).
        return parts.scheme == "https" or not secure_socket(scope)
    return trusted_origin(origin, parts.scheme, netloc)


def secure_socket(scope: Any) -> bool:
    """Whether the socket came over TLS as the server knows it: ``wss``, or the header
    ``SECURE_PROXY_SSL_HEADER`` names (a proxy that ends TLS), as ``request.is_secure()``."""
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if not proxy:
        return False
    name, value = proxy
    wanted = name.removeprefix("HTTP_").replace("_", "-").lower().encode()
    sent = scope_headers(scope).get(wanted)
    return sent is not None and sent.split(",")[0].strip() == value


def trusted_origin(origin: str, scheme: str, netloc: str) -> bool:
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "*" not in trusted:
            if origin.lower() == trusted.lower():
                return True
            continue
        pattern = urlsplit(trusted)
        if pattern.scheme == scheme and is_same_domain(netloc, pattern.netloc.lower().lstrip("*")):
            return True
    return False


class HandshakeOutageGuard:
    """A handshake that meets an outage before the app answers it (the session cookie or the
    user read from a database that is away) is accepted and closed with "try again later"
    (1013, or the app's own code where the server cannot send it), which clients retry,
    instead of an error the server logs and the client sees as a failed connection."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if scope.get("type") != "websocket":
            return await self.inner(scope, receive, send)
        answered = False

        async def sending(message: Any) -> None:
            nonlocal answered
            answered = True
            await send(message)

        try:
            return await self.inner(scope, receive, sending)
        except Exception as error:
            if answered or not unavailable(error):
                raise
            frame_outage.failed(error)
        await receive()  # the client's websocket.connect
        await send({"type": "websocket.accept"})
        for code in close_codes(TRY_AGAIN_LATER):
            try:
                await send({"type": "websocket.close", "code": code})
            except Exception:
                continue
            return None
        return None
