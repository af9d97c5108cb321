"""Admin inspection, one module per product: sessions with their event log, outbox and wakes
(``sessions``), run snapshots and checkpoints (``runs``), conversations as transcripts
(``conversations``), the semantic cache's answers (``cache``); what they draw apart
(``transcripts``). Read-only: a blob is only ever
written through a Store (the API's PUT does that with the version check)."""

from . import cache, conversations, runs, sessions  # noqa: F401  (each registers its admins)
