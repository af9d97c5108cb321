"""Tenants: whose rows the running code may touch (``WARLOCK_SESSIONS["TENANT_RESOLVER"]``).

With a resolver set, every row of the app's tables (the locks and the cache's removal counters
aside) carries the tenant it was made for, and code runs inside a *scope*: the API and the
websockets enter the requester's tenant, :class:`TenantMiddleware` every other view's (the
admin's), and the worker each row's. Inside a tenant's scope the models' managers read only
that tenant's rows and name it on the rows they make, and the stores' own statements do the
same (:func:`current`). The operator's scope (:data:`EVERY_TENANT`: the worker's claims, this
app's commands) sees every tenant. Code that entered no scope, and a request the resolver
names no tenant for, read nothing and write nothing while tenants are on.

This module sits below the models: it knows the setting, not the tables.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.db import InterfaceError, OperationalError
from django.http import HttpResponseForbidden
from django.http.request import host_validation_re, split_domain_port, validate_host

from .conf import warlock_settings
from .errors import TenantUnresolvedError

logger = logging.getLogger("warlock_sessions.tenancy")

#: The longest tenant name a row holds.
MAX_TENANT_LENGTH = 64


class _EveryTenant:
    """What a resolver returns for a requester who may see every tenant (the platform's own
    operators): their requests run outside every scope. An object, not a text, so no header
    or field a client controls can ever spell it."""

    def __repr__(self) -> str:
        return "EVERY_TENANT"


EVERY_TENANT = _EveryTenant()


class _Unresolved:
    """The scope of a request the resolver named no tenant for: nothing to read or write."""

    def __repr__(self) -> str:
        return "<no tenant>"


UNRESOLVED = _Unresolved()


class _Deferred:
    """The scope of a request whose user may not be known yet (``TenantMiddleware`` runs
    before DRF authenticates a token or Basic credentials): resolved when first read, and
    again once the request's user is another (DRF sets the one it authenticated)."""

    _NOBODY_YET = object()

    def __init__(self, request: Any) -> None:
        self.request = request
        #: The user it was resolved for and what it resolved to, as one value: threads
        #: sharing the request read one or the other, never a mix.
        self.resolved_for: tuple[Any, Scope] = (self._NOBODY_YET, UNRESOLVED)

    def resolved(self) -> Scope:
        user = getattr(self.request, "user", None)
        resolved_for, scope = self.resolved_for
        if user is not resolved_for:
            scope = resolve(self.request)
            self.resolved_for = (user, scope)
        return scope


class _Default:
    """The scope of code that entered none: every tenant while tenants are off; none while
    they are on (fails closed: a thread or task that lost its request's scope reads nothing
    and writes nothing, instead of every tenant's rows). The operator's code says so:
    ``tenant_scope(EVERY_TENANT)``; the worker and the commands do."""

    def __repr__(self) -> str:
        return "<no scope entered>"


_DEFAULT = _Default()
#: The scope of code that entered none, to enter it again explicitly (a socket not admitted).
NO_SCOPE = _DEFAULT
NoScope = _Default


Scope = str | _Unresolved | None
_scope: contextvars.ContextVar[Scope | _Deferred | _Default] = contextvars.ContextVar(
    "warlock_tenant", default=_DEFAULT
)


def enabled() -> bool:
    """Whether tenants are kept apart (``TENANT_RESOLVER`` is set)."""
    return warlock_settings.TENANT_RESOLVER is not None


def current_scope() -> Scope:
    """The scope as it is now, unresolved included."""
    scope = _scope.get()
    if isinstance(scope, _Default):
        return UNRESOLVED if enabled() else None
    return scope.resolved() if isinstance(scope, _Deferred) else scope


def entered() -> bool:
    """Whether the running code entered a scope (a request's, a socket's, ``tenant_scope``),
    rather than running with none, as a thread another library started does."""
    return not isinstance(_scope.get(), _Default)


def current() -> str | None:
    """The tenant the running code is scoped to; ``None`` in the operator's scope, or while
    tenants are off (every tenant). Raises :class:`TenantUnresolvedError` where there is no
    tenant: a request the resolver named none for, or code that entered no scope while
    tenants are on."""
    scope = current_scope()
    if isinstance(scope, _Unresolved):
        raise TenantUnresolvedError()
    return scope


def checked_tenant(tenant: Any) -> str:
    """``tenant`` if it can name a tenant: text of 1 to 64 printable characters (not ``*``,
    which is too easily taken for every tenant)."""
    if (
        not isinstance(tenant, str)
        or not 0 < len(tenant) <= MAX_TENANT_LENGTH
        or not tenant.isprintable()
        or tenant == "*"
    ):
        raise ValueError(
            f"{tenant!r} cannot name a tenant: a tenant is a text of 1 to {MAX_TENANT_LENGTH} "
            "printable characters"
        )
    return tenant


def resolve(requester: Any) -> Scope:
    """The scope of a request: what ``TENANT_RESOLVER`` says of ``requester`` (an
    ``HttpRequest``, a DRF request, or for a socket a ``permissions.Requester``). ``None``
    when tenants are off or the resolver answers :data:`EVERY_TENANT`; :data:`UNRESOLVED`
    when it answers ``None`` or ``""``, or fails (logged: a resolver that breaks on one
    account must not take the site down, nor let that account see every tenant)."""
    resolver: Callable[[Any], Any] | None = warlock_settings.TENANT_RESOLVER
    if resolver is None:
        return None
    try:
        return scope_of(resolver(requester))
    except (OperationalError, InterfaceError):
        raise  # the database is away (a resolver reading a profile): 503, try again, not 403
    except Exception:
        logger.exception("TENANT_RESOLVER failed: the request gets no tenant")
        return UNRESOLVED


def scope_of(tenant: Any) -> Scope:
    """What a resolver's answer means: a tenant's name (a whole number, a primary key, is
    taken as its digits), ``None`` for :data:`EVERY_TENANT`, :data:`UNRESOLVED` for ``None``
    or ``""``; anything else is a ``ValueError``."""
    if tenant is EVERY_TENANT:
        return None
    if isinstance(tenant, int) and not isinstance(tenant, bool):
        tenant = str(tenant)
    if tenant is None or tenant == "":
        return UNRESOLVED
    return checked_tenant(tenant)


def request_host(request: Any) -> str:
    """The host name a request was sent to, lowercased and without its port, for a resolver
    that tells tenants by subdomain: an HTTP request's as Django reads it
    (``request.get_host()``: ``USE_X_FORWARDED_HOST`` and ``ALLOWED_HOSTS`` apply), or a
    socket's ``Host`` header (from the ASGI scope of a ``permissions.Requester``; its
    ``X-Forwarded-Host`` with ``USE_X_FORWARDED_HOST``), held to the same rules; ``""`` for
    a host Django would refuse."""
    if hasattr(request, "get_host"):
        try:
            return split_domain_port(request.get_host().lower())[0]
        except DisallowedHost:
            return ""
    return split_domain_port(scope_host(getattr(request, "scope", None) or {}))[0]


def scope_headers(scope: Any) -> dict[bytes, str]:
    """An ASGI connection's headers by lowercased name (the last of a repeated one)."""
    return {
        bytes(name).lower(): bytes(value).decode("latin-1")
        for name, value in scope.get("headers") or ()
    }


def scope_host(scope: Any) -> str:
    """The host (with its port, if one was sent) an ASGI connection was made to, lowercased:
    its ``Host`` header, or ``X-Forwarded-Host`` with ``USE_X_FORWARDED_HOST``, as
    ``request.get_host()`` reads them and held to ``ALLOWED_HOSTS`` the same way; ``""`` for
    a host Django would refuse."""
    headers = scope_headers(scope)
    forwarded = settings.USE_X_FORWARDED_HOST and headers.get(b"x-forwarded-host")
    host = (forwarded or headers.get(b"host", "")).lower()
    domain = split_domain_port(host)[0]
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:  # as Django's get_host
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    if not host_validation_re.match(host) or not validate_host(domain, allowed):
        return ""
    return host


def enter(scope: Scope | _Deferred | _Default) -> contextvars.Token[Scope | _Deferred | _Default]:
    """Enter ``scope`` for the rest of the current context (a socket's task)."""
    return _scope.set(scope)


@contextmanager
def tenant_scope(tenant: str | int | _EveryTenant) -> Iterator[None]:
    """Run the block as ``tenant`` (a name or a number, as a resolver returns them), or as
    the operator with :data:`EVERY_TENANT`, e.g. server code outside a request:
    ``with tenant_scope("acme"): Host("booking").handle(...)``. ``None`` and ``""`` are
    refused: no tenant is not every tenant."""
    scope = scope_of(tenant)
    if isinstance(scope, _Unresolved):
        raise ValueError(
            f"{tenant!r} cannot name a tenant: give a name, or EVERY_TENANT for the operator"
        )
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


_Function = TypeVar("_Function", bound=Callable[..., Any])


def for_every_tenant(function: _Function) -> _Function:
    """``function`` runs as the operator does, over every tenant (the worker's claims, the
    commands' sweeps); what it does for one row enters that row's tenant itself."""

    @functools.wraps(function)
    def operator(*args: Any, **kwargs: Any) -> Any:
        with tenant_scope(EVERY_TENANT):
            return function(*args, **kwargs)

    return operator  # type: ignore[return-value]


@contextmanager
def kept_scope() -> Iterator[None]:
    """Whatever the block enters, the scope is as it was after it (a request's handling)."""
    token = _scope.set(_scope.get())
    try:
        yield
    finally:
        _scope.reset(token)


def unscoped_context() -> contextvars.Context:
    """A copy of the current context outside every scope: for a task that serves sockets of
    every tenant (the log follower), whichever socket happened to start it."""
    context = contextvars.copy_context()
    context.run(_scope.set, None)
    return context


def scoped_rows(rows: Any) -> Any:
    """A queryset of a tenant's table as the current scope may read it."""
    scope = current_scope()
    if scope is None:
        return rows
    if isinstance(scope, _Unresolved):
        return rows.none()
    return rows.filter(tenant=scope)


def tenant_of_new_row() -> str:
    """The tenant a row made now belongs to: the scope's, or ``""`` outside every scope.
    Raises :class:`TenantUnresolvedError` in a request the resolver named no tenant for."""
    return current() or ""


def _streamed_in(scope: _Deferred, response: Any) -> Any:
    """``response``, its streamed body (read after the view returned, by the server) read in
    the request's scope too: a streamed export is its tenant's rows."""
    if not getattr(response, "streaming", False) or getattr(response, "file_to_stream", None):
        return response  # a file's body reads no rows, and keeps the server's sendfile
    if response.is_async:
        response.streaming_content = _async_chunks_in(scope, response.streaming_content)
    else:
        response.streaming_content = _chunks_in(scope, iter(response.streaming_content))
    return response


def _chunks_in(scope: _Deferred, chunks: Iterator[Any]) -> Iterator[Any]:
    while True:
        token = _scope.set(scope)
        try:
            chunk = next(chunks)
        except StopIteration:
            return
        finally:
            _scope.reset(token)
        yield chunk


async def _async_chunks_in(scope: _Deferred, chunks: AsyncIterable[Any]) -> AsyncIterator[Any]:
    iterator = aiter(chunks)
    while True:
        token = _scope.set(scope)
        try:
            chunk = await anext(iterator)
        except StopAsyncIteration:
            return
        finally:
            _scope.reset(token)
        yield chunk


class TenantMiddleware:
    """Runs every view of a request inside the tenant ``TENANT_RESOLVER`` names for it, so
    the admin and a project's own views read and write only that tenant's rows, a streamed
    body included. The tenant is resolved when first needed (under ASGI: before the view, in
    a thread), and again if the request's user changes (a DRF view's token or Basic
    credentials are authenticated after every middleware); a write with no tenant is
    answered 403. Put it after ``AuthenticationMiddleware``. Check ``warlock_sessions.E032``
    asks for it while tenants are on."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        deferred = _Deferred(request)
        with kept_scope():
            enter(deferred)
            return _streamed_in(deferred, self.get_response(request))

    async def _acall(self, request: Any) -> Any:
        deferred = _Deferred(request)
        # Resolved now, in a thread (the resolver may read the user from the database), so
        # code on the event loop reads it without a query.
        await sync_to_async(deferred.resolved)()
        with kept_scope():
            enter(deferred)
            return _streamed_in(deferred, await self.get_response(request))

    def process_exception(self, request: Any, exception: Exception) -> Any:
        if isinstance(exception, TenantUnresolvedError):
            return HttpResponseForbidden(str(exception))
        return None
