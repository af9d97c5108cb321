"""``/api/snapshots/``: the run snapshots of the configured store, for operators (staff or the
model permissions only: snapshots hold agents' internals)."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response

from ..backends.keyed import check_key
from ..errors import (
    ConditionalSaveUnsupportedError,
    InvalidSnapshotError,
    RunNotRunningError,
    SnapshotConflictError,
)
from ..host.wire import clean_text_param
from ..permissions import has_permission
from ..snapshots import SnapshotStore, default_snapshot_store
from ..workflows.runs import cancel_saved
from . import schema
from .base import WarlockViewSet
from .errors import ApiError
from .sessions import SessionPagination

#: The model permissions each action needs.
NEEDED = {
    "list": ("view",),
    "retrieve": ("view",),
    "partial_update": ("view", "change"),  # the answer holds the snapshot
    "destroy": ("delete",),
}
#: The longest reason a cancel may give.
MAX_REASON = 500


class SnapshotPermission(BasePermission):
    """The model permissions ``NEEDED`` names (``view_snapshot`` to read, ``view_snapshot``
    and ``change_snapshot`` to cancel, ``delete_snapshot``), staff or not. Everyone else gets
    403 whatever the key, so the answer says nothing about which runs exist."""

    def has_permission(self, request: Any, view: Any) -> bool:
        user = request.user
        needed = NEEDED.get(getattr(view, "action", "") or "", ("delete",))
        return all(has_permission(user, f"{need}_snapshot") for need in needed)


class SnapshotViewSet(WarlockViewSet):
    lookup_url_kwarg = "key"
    lookup_value_regex = r"[\s\S]+"  # any key, "/" and newlines too: the rest of the path
    permission_classes = [SnapshotPermission]
    pagination_class = SessionPagination

    def store(self) -> SnapshotStore:
        store = default_snapshot_store()
        if store is None:
            raise ApiError(
                404,
                "no-snapshot-store",
                'No snapshot store is configured (WARLOCK_SESSIONS["SNAPSHOT_STORE"]).',
            )
        return store

    @staticmethod
    def key(value: str) -> str:
        try:
            return check_key(clean_text_param("key", value))
        except InvalidSnapshotError as error:
            raise ApiError(400, "invalid-input", f"{error}.", field="key") from None

    @schema.SNAPSHOT_LIST
    def list(self, request: Request) -> Response:
        prefix = clean_text_param("prefix", str(request.query_params.get("prefix", "")))
        keys = self.store().list(prefix or None)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(keys, request, view=self)
        return paginator.get_paginated_response(page or [])

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, InvalidSnapshotError):  # a key this store cannot hold (too long)
            exc = ApiError(400, "invalid-input", f"{exc}.", field="key")
        return super().handle_exception(exc)

    @schema.SNAPSHOT_RETRIEVE
    def retrieve(self, request: Request, key: str) -> Response:
        key = self.key(key)
        snapshot = self.store().load(key)
        if snapshot is None:
            raise ApiError(404, "not-found", f"There is no snapshot {key!r}.")
        return Response({"key": key, "snapshot": snapshot})

    @schema.SNAPSHOT_CANCEL
    def partial_update(self, request: Request, key: str) -> Response:
        """``{"status": "cancelled", "reason"?}`` cancels a running run: the process running
        it stops at its next save. The only change a snapshot takes over the API."""
        key = self.key(key)
        reason = cancel_reason(request.data)
        store = self.store()
        try:
            snapshot = cancel_saved(
                store, key, reason or f"cancelled over the API by {request.user}"
            )
        except RunNotRunningError as error:
            if error.status is None:
                raise ApiError(404, "not-found", f"There is no snapshot {key!r}.") from None
            raise ApiError(409, "run-not-running", f"{error}.", status=error.status) from None
        except ConditionalSaveUnsupportedError as error:
            raise ApiError(409, "cancel-unsupported", f"{error}.") from None
        except SnapshotConflictError:  # the run saved between every try: it is very busy
            raise ApiError(
                409, "snapshot-conflict", f"The run {key!r} kept saving; cancel it again."
            ) from None
        return Response({"key": key, "snapshot": snapshot})

    @schema.SNAPSHOT_DESTROY
    def destroy(self, request: Request, key: str) -> Response:
        key = self.key(key)
        store = self.store()
        if store.load(key) is None:
            raise ApiError(404, "not-found", f"There is no snapshot {key!r}.")
        store.delete(key)
        return Response(status=status.HTTP_204_NO_CONTENT)


def cancel_reason(body: object) -> str:
    """The reason of a cancel request, after checking it is one: ``{"status": "cancelled"}``
    with an optional ``reason`` (text)."""
    if not isinstance(body, dict) or body.get("status") != "cancelled":
        raise ApiError(
            400,
            "invalid-input",
            'The one change a snapshot takes is {"status": "cancelled"}.',
            field="status",
        )
    unknown = sorted(set(body) - {"status", "reason"})
    if unknown:
        raise ApiError(400, "invalid-input", f"Unknown field {unknown[0]!r}.", field=unknown[0])
    reason = body.get("reason", "")
    if not isinstance(reason, str) or len(reason) > MAX_REASON:
        raise ApiError(
            400,
            "invalid-input",
            f"reason is text of at most {MAX_REASON} characters.",
            field="reason",
        )
    return clean_text_param("reason", reason)
