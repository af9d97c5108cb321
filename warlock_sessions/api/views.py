"""Moved to ``api/sessions.py`` (the sessions endpoints, beside ``api/conversations.py``);
this import path keeps working."""

from .sessions import (  # noqa: F401
    COUNT_CAP,
    EVENTS_PAGE,
    MAX_SEQ,
    CappedPaginator,
    SessionPagination,
    SessionViewSet,
)
