"""Admin inspection, one module per product: sessions with their event log, outbox and wakes
(``sessions``), chats with people and answering them (``handover``), run snapshots and
checkpoints (``runs``), conversations as transcripts (``conversations``), LangGraph threads
(``graphs``), the semantic cache's answers (``cache``); what they draw apart
(``transcripts``). Read-only but for answering a chat: a blob is only ever written through a
Store (the API's PUT does that with the version check), and a person's answer is a turn of
the session's host."""

from . import cache, conversations, graphs, handover, runs, sessions  # noqa: F401  (each registers its admins)
