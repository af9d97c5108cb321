"""Moved to ``realtime/sessions.py`` (the sessions' socket, beside ``realtime/conversations.py``);
this import path keeps working."""

from .sessions import SessionConsumer  # noqa: F401
