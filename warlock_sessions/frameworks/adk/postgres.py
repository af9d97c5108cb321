"""``WarlockSessionService``'s two hot calls on PostgreSQL, one statement each: ``append_event``
(the conversation moved on a version if still at the one read, the event appended, the state
deltas merged) and ``get_session`` (the session's state, the state it shares and its events).
With ``ENCRYPTION_KEYS`` the state is sealed and cannot be merged in the database: appends go
through the ORM, as they do on other databases; one comparison with ADK's own service runs
both.
"""

from __future__ import annotations

from typing import Any

from ..langgraph.postgres import run

#: The event appended and the deltas merged, when the conversation is still at the version
#: the caller read (``%(version)s``; any, when it read none), the session is the app's and
#: user's, and the event is not one of its latest again: the new version, else no row.
APPEND = """
WITH conversation AS (
    UPDATE warlock_conversations
    SET version = version + 1, turns = turns + 1, updated_at = now()
    WHERE id = %(session)s
      AND (%(version)s::int IS NULL OR version = %(version)s::int)
      AND (%(scope)s::text IS NULL OR tenant = %(scope)s::text)
      AND EXISTS (
          SELECT 1 FROM warlock_agent_state own
          WHERE own.scope = 'session' AND own.app_name = %(app)s AND own.user_id = %(user)s
            AND own.session_id = %(session)s AND own.tenant = warlock_conversations.tenant)
      AND NOT EXISTS (
          SELECT 1 FROM (
              SELECT message FROM warlock_conversation_messages
              WHERE conversation_id = %(session)s ORDER BY position DESC LIMIT 50) recent
          WHERE recent.message = %(event)s)
    RETURNING tenant, version
), own AS (
    UPDATE warlock_agent_state
    SET state = state || %(own)s::jsonb, updated_at = %(at)s
    FROM conversation
    WHERE scope = 'session' AND app_name = %(app)s AND user_id = %(user)s
      AND session_id = %(session)s AND warlock_agent_state.tenant = conversation.tenant
), shared AS (
    INSERT INTO warlock_agent_state
        (tenant, scope, app_name, user_id, session_id, state, updated_at)
    SELECT conversation.tenant, delta.scope, %(app)s, delta.user_id, '', delta.state, now()
    FROM conversation,
        (VALUES ('app', '', %(app_delta)s::jsonb), ('user', %(user)s, %(user_delta)s::jsonb))
        AS delta (scope, user_id, state)
    WHERE delta.state <> '{}'::jsonb
    ON CONFLICT (tenant, scope, app_name, user_id, session_id) DO UPDATE
        SET state = warlock_agent_state.state || EXCLUDED.state, updated_at = now()
)
INSERT INTO warlock_conversation_messages (tenant, conversation_id, position, message)
SELECT conversation.tenant, %(session)s,
       (SELECT COALESCE(MAX(position), -1) + 1
        FROM warlock_conversation_messages WHERE conversation_id = %(session)s),
       %(event)s
FROM conversation
RETURNING (SELECT version FROM conversation)
"""

#: A session: its version, its own state and last update, the app's and the user's state,
#: and its latest events (``%(recent)s``; all, when ``NULL``) with their positions.
SESSION = """
SELECT c.version, own.state, own.updated_at,
    (SELECT state FROM warlock_agent_state shared
     WHERE shared.tenant = own.tenant AND shared.scope = 'app' AND shared.app_name = %(app)s
       AND shared.user_id = '' AND shared.session_id = ''),
    (SELECT state FROM warlock_agent_state shared
     WHERE shared.tenant = own.tenant AND shared.scope = 'user' AND shared.app_name = %(app)s
       AND shared.user_id = %(user)s AND shared.session_id = ''),
    (SELECT array_agg(latest.position ORDER BY latest.position) FROM (
        SELECT position FROM warlock_conversation_messages
        WHERE conversation_id = c.id ORDER BY position DESC LIMIT %(recent)s) latest),
    (SELECT array_agg(latest.message ORDER BY latest.position) FROM (
        SELECT position, message FROM warlock_conversation_messages
        WHERE conversation_id = c.id ORDER BY position DESC LIMIT %(recent)s) latest)
FROM warlock_agent_state own
JOIN warlock_conversations c ON c.id = own.session_id AND c.tenant = own.tenant
WHERE own.scope = 'session' AND own.app_name = %(app)s AND own.user_id = %(user)s
  AND own.session_id = %(session)s
  AND (%(scope)s::text IS NULL OR own.tenant = %(scope)s::text)
"""


def append(using: str, parameters: dict[str, Any]) -> int | None:
    """:data:`APPEND`: the conversation's new version, or ``None`` when nothing was written."""
    found = run(using, APPEND, parameters)
    return None if found is None else int(found[0])


def session(using: str, parameters: dict[str, Any]) -> Any:
    return run(using, SESSION, parameters)
