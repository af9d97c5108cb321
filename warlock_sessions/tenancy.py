"""Tenants: whose rows the running code may touch (``WARLOCK_SESSIONS["TENANT_RESOLVER"]``).

With a resolver set, every row of the app's tables (the locks' aside) carries the tenant it was
made for, and code runs inside a *scope*: the API and the websockets enter the requester's
tenant, :class:`TenantMiddleware` every other view's (the admin's), and the worker each row's.
Inside a scope the models' managers read only that tenant's rows and name it on the rows they
make, and the stores' own statements do the same (:func:`current`). Outside every scope (a
management command, the shell, the worker between two rows) code sees every tenant, as an
operator does. A request the resolver names no tenant for reads nothing and writes nothing.

This module sits below the models: it knows the setting, not the tables.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async

from .conf import warlock_settings
from .errors import TenantUnresolvedError

#: What a resolver returns for a requester who may see every tenant (the platform's own
#: staff): their requests run unscoped.
EVERY_TENANT = "*"
#: The longest tenant name a row holds.
MAX_TENANT_LENGTH = 64


class _Unresolved:
    """The scope of a request the resolver named no tenant for: nothing to read or write."""

    def __repr__(self) -> str:
        return "<no tenant>"


UNRESOLVED = _Unresolved()

Scope = str | _Unresolved | None
_scope: contextvars.ContextVar[Scope] = contextvars.ContextVar("warlock_tenant", default=None)


def enabled() -> bool:
    """Whether tenants are kept apart (``TENANT_RESOLVER`` is set)."""
    return warlock_settings.TENANT_RESOLVER is not None


def current() -> str | None:
    """The tenant the running code is scoped to; ``None`` outside every scope (every tenant).
    Raises :class:`TenantUnresolvedError` in a request the resolver named no tenant for."""
    scope = _scope.get()
    if isinstance(scope, _Unresolved):
        raise TenantUnresolvedError()
    return scope


def current_scope() -> Scope:
    """The scope as it is, unresolved included (for code that reads nothing in it)."""
    return _scope.get()


def checked_tenant(tenant: Any) -> str:
    """``tenant`` if it can name a tenant: text of 1 to 64 printable characters."""
    if (
        not isinstance(tenant, str)
        or not 0 < len(tenant) <= MAX_TENANT_LENGTH
        or not tenant.isprintable()
        or tenant == EVERY_TENANT
    ):
        raise ValueError(
            f"{tenant!r} cannot name a tenant: a tenant is a text of 1 to {MAX_TENANT_LENGTH} "
            "printable characters"
        )
    return tenant


def resolve(requester: Any) -> Scope:
    """The scope of a request: what ``TENANT_RESOLVER`` says of ``requester`` (an
    ``HttpRequest``, a DRF request, or for a socket a ``permissions.Requester``): a name, or
    a whole number (a tenant's primary key) taken as its digits. ``None``
    when tenants are off or the resolver answers :data:`EVERY_TENANT`; :data:`UNRESOLVED`
    when it answers ``None`` or ``""``."""
    resolver: Callable[[Any], Any] | None = warlock_settings.TENANT_RESOLVER
    if resolver is None:
        return None
    tenant = resolver(requester)
    if isinstance(tenant, int) and not isinstance(tenant, bool):
        tenant = str(tenant)  # a tenant's primary key
    if tenant == EVERY_TENANT:
        return None
    if tenant is None or tenant == "":
        return UNRESOLVED
    return checked_tenant(tenant)


def request_host(request: Any) -> str:
    """The host a request was sent to (its ``Host`` header, lowercased, port included), for
    a resolver that tells tenants by subdomain: an HTTP request's, or a socket's (from the
    ASGI scope of a ``permissions.Requester``)."""
    meta = getattr(request, "META", None)
    if meta is not None:
        return str(meta.get("HTTP_HOST", "")).lower()
    scope = getattr(request, "scope", None) or {}
    for name, value in scope.get("headers") or ():
        if name == b"host":
            return bytes(value).decode("latin-1").lower()
    return ""


def enter(scope: Scope) -> contextvars.Token[Scope]:
    """Enter ``scope`` for the rest of the current context (a socket's task)."""
    return _scope.set(scope)


@contextmanager
def tenant_scope(tenant: str | None) -> Iterator[None]:
    """Run the block as ``tenant`` (``None``: every tenant), e.g. server code outside a
    request: ``with tenant_scope("acme"): Host("booking").handle(...)``."""
    token = _scope.set(None if tenant is None else checked_tenant(tenant))
    try:
        yield
    finally:
        _scope.reset(token)


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
    scope = _scope.get()
    if scope is None:
        return rows
    if isinstance(scope, _Unresolved):
        return rows.none()
    return rows.filter(tenant=scope)


def tenant_of_new_row() -> str:
    """The tenant a row made now belongs to: the scope's, or ``""`` outside every scope.
    Raises :class:`TenantUnresolvedError` in a request the resolver named no tenant for."""
    return current() or ""


class TenantMiddleware:
    """Runs every view of a request inside the tenant ``TENANT_RESOLVER`` names for it, so
    the admin and a project's own views read and write only that tenant's rows (the API and
    the websockets enter it themselves, after their own authentication). Put it after
    ``AuthenticationMiddleware``. Check ``warlock_sessions.E032`` asks for it while tenants
    are on."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        with kept_scope():
            enter(resolve(request))
            return self.get_response(request)

    async def _acall(self, request: Any) -> Any:
        with kept_scope():
            # The resolver may read the user from the database: it runs in a thread.
            enter(await sync_to_async(resolve)(request))
            return await self.get_response(request)
