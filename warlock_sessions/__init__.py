"""warlock_sessions: durable, concurrency-safe conversation state for Django."""

__version__ = "0.3.0.dev0"
