"""A Django database backend: PostgreSQL whose connection pool finds connections its server
closed without a query, and replaces them all at once (``ENGINE``
``"warlock_sessions.backends.postgresql"``; docs/deployment.md)."""
