"""A socket opens only from a page of its own host (``SameOriginValidator``): browsers send a
site's cookies with a socket that any page of the same site opens, sibling subdomains included.
The same in a real browser: tests/browser/test_cross_site_socket.py."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.testing import WebsocketCommunicator
from django.core.checks import run_checks
from django.db import connections
from django.test import override_settings

from warlock_sessions.realtime.middleware import HandshakeOutageGuard, SameOriginValidator
from warlock_sessions.realtime.routing import websocket_urlpatterns


@pytest.fixture(autouse=True)
def no_connection_left_in_the_sync_thread() -> None:
    """A refused socket's plain Channels consumer tidies the database connections of
    asgiref's one sync thread (``close_old_connections``); these tests have no database, so
    one an earlier test of the worker left open there failed them (database access not
    allowed). Closed first."""
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()


HOSTS = [".chat.test", "localhost"]


async def accepting(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "websocket.accept"})


async def opens(
    host: str, origin: str | None, application: Any = None, scheme: str = "ws", **headers: str
) -> bool:
    sent = [(b"host", host.encode())]
    if origin is not None:
        sent.append((b"origin", origin.encode()))
    sent += [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    communicator = WebsocketCommunicator(
        application or SameOriginValidator(accepting), "/ws/sessions/s-1/", headers=sent
    )
    communicator.scope["scheme"] = scheme
    accepted, _ = await communicator.connect(timeout=5)
    await communicator.disconnect()
    return bool(accepted)


@pytest.mark.asyncio
@override_settings(ALLOWED_HOSTS=HOSTS)
@pytest.mark.parametrize(
    ("host", "origin", "expected"),
    [
        ("acme.chat.test", "https://acme.chat.test", True),
        ("acme.chat.test", "http://acme.chat.test", True),  # TLS ended by a proxy
        ("acme.chat.test:8000", "http://acme.chat.test:8000", True),
        ("acme.chat.test:443", "https://acme.chat.test", True),
        ("acme.chat.test", "https://ACME.chat.test", True),
        ("acme.chat.test", "https://globex.chat.test", False),  # a sibling tenant's page
        ("acme.chat.test:8000", "http://globex.chat.test:8000", False),
        ("acme.chat.test:8000", "http://acme.chat.test:8001", False),
        ("acme.chat.test", "https://acme.chat.test.evil.test", False),
        ("acme.chat.test", "https://evil.test", False),
        ("acme.chat.test", "null", False),  # a sandboxed frame or a file:// page
        ("acme.chat.test", "https://user@acme.chat.test", False),
        ("acme.chat.test", "ftp://acme.chat.test", False),
        ("acme.chat.test", "", False),
        ("acme.chat.test", None, False),  # no Origin, as Channels' validator refuses too
        ("evil.test", "https://evil.test", False),  # a host Django refuses
    ],
)
async def test_a_socket_opens_only_from_its_own_host(
    host: str, origin: str | None, expected: bool
) -> None:
    assert await opens(host, origin) is expected


@pytest.mark.asyncio
@override_settings(
    ALLOWED_HOSTS=HOSTS,
    CSRF_TRUSTED_ORIGINS=["https://app.partner.test", "https://*.widgets.test"],
)
@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        ("https://app.partner.test", True),
        ("http://app.partner.test", False),  # a trusted origin names its scheme
        ("https://shop.widgets.test", True),
        ("https://widgets.test", True),  # as Django's CSRF check reads "*."
        ("http://shop.widgets.test", False),
        ("https://shop.widgets.test.evil.test", False),
    ],
)
async def test_csrf_trusted_origins_may_open_sockets(origin: str, expected: bool) -> None:
    assert await opens("acme.chat.test", origin) is expected


@pytest.mark.asyncio
@override_settings(ALLOWED_HOSTS=HOSTS, SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"))
async def test_a_plain_http_page_never_opens_a_secure_socket() -> None:
    """The attack found an http page of the same host opening the wss socket, with the
    secure site's cookies; Django's CSRF check refuses the same of a form."""
    assert not await opens("acme.chat.test", "http://acme.chat.test", scheme="wss")
    assert await opens("acme.chat.test", "https://acme.chat.test", scheme="wss")
    assert not await opens("acme.chat.test", "http://acme.chat.test", x_forwarded_proto="https")
    assert await opens("acme.chat.test", "https://acme.chat.test", x_forwarded_proto="https")
    # A socket the server cannot tell is secure (TLS ended by a proxy it is not told of).
    assert await opens("acme.chat.test", "http://acme.chat.test")


@pytest.mark.asyncio
@override_settings(ALLOWED_HOSTS=HOSTS, USE_X_FORWARDED_HOST=True)
async def test_behind_a_proxy_the_forwarded_host_is_the_socket_s_own() -> None:
    assert await opens("10.0.0.5:8000", "https://acme.chat.test", x_forwarded_host="acme.chat.test")
    assert not await opens(
        "10.0.0.5:8000", "https://globex.chat.test", x_forwarded_host="acme.chat.test"
    )


@pytest.mark.asyncio
@override_settings(ALLOWED_HOSTS=HOSTS)
async def test_channels_own_validator_lets_a_sibling_subdomain_in() -> None:
    """Why the app ships its own: the stack the Channels tutorial recommends admits the page
    of another tenant."""
    assert await opens(
        "acme.chat.test", "https://globex.chat.test", AllowedHostsOriginValidator(accepting)
    )


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@override_settings(ALLOWED_HOSTS=HOSTS)
async def test_the_example_project_refuses_a_sibling_subdomain_s_page() -> None:
    from example_project.asgi import application

    assert not await opens("acme.chat.test", "http://globex.chat.test", application)


def w008(asgi: str) -> list[str]:
    with override_settings(ASGI_APPLICATION=asgi):
        return [message.msg for message in run_checks() if message.id == "warlock_sessions.W008"]


WITH_CHANNELS_VALIDATOR = ProtocolTypeRouter(
    {
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        )
    }
)
WITH_OURS = ProtocolTypeRouter(
    {
        "websocket": SameOriginValidator(
            HandshakeOutageGuard(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
        )
    }
)
WITHOUT_ANY = ProtocolTypeRouter({"websocket": URLRouter(websocket_urlpatterns)})


@pytest.mark.django_db
def test_the_check_warns_of_a_stack_without_the_same_origin_validator() -> None:
    here = "tests.realtime.test_socket_origin"
    assert w008("example_project.asgi.application") == []
    assert w008(f"{here}.WITH_OURS") == []
    assert "does not check that a socket's Origin" in w008(f"{here}.WITH_CHANNELS_VALIDATOR")[0]
    assert len(w008(f"{here}.WITHOUT_ANY")) == 1
    assert w008(f"{here}.NOT_THERE") == []  # Channels itself reports it
