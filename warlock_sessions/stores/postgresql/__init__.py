"""Moved to ``warlock_sessions.backends.postgresql``; this ``ENGINE`` path keeps working."""
