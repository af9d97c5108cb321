"""Other agent frameworks' state on this app's tables, one module per framework, each an
optional extra (``warlock_sessions.frameworks.openai_agents``: ``[openai-agents]``)."""
