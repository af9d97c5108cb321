"""Conversations (a header and its messages, as ``conversations.DjangoConversationStore`` keeps
them) and the semantic cache's entries and scopes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from ..encryption import cache_place, message_place, open_json, pending_place
from ..engine.session import MAX_SESSION_ID_LENGTH
from . import Owned, Tenanted, visitor_index


class Conversation(Owned):
    """The header of a conversation of ``conversations.DjangoConversationStore``: its version
    (grows with every write), turns, pending mark, where it was forked from and who owns it
    (a user, or an anonymous visitor's key, as ``SessionOwner``). Its messages are
    ``ConversationMessage`` rows."""

    counted_as = "conversations"

    id = models.CharField(_("id"), max_length=MAX_SESSION_ID_LENGTH, primary_key=True)
    version = models.PositiveIntegerField(_("version"), default=1)
    turns = models.PositiveIntegerField(_("turns"), default=0)
    pending = models.JSONField(_("pending turn"), null=True, blank=True)
    forked_from = models.JSONField(_("forked from"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"))
    updated_at = models.DateTimeField(_("updated"))

    class Meta:
        db_table = "warlock_conversations"
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        indexes = [
            visitor_index("warlock_conversation_visitor"),
            models.Index(
                fields=["tenant", "-updated_at"],
                name="warlock_conversation_tenant",
                condition=~models.Q(tenant=""),
            ),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def opened_pending(self) -> Any:
        """The pending turn, opened if it was sealed; ``None`` when there is none."""
        return None if self.pending is None else open_json(self.pending, *pending_place(self.id))


class JSONTextField(models.TextField):  # type: ignore[type-arg]
    """A JSON value kept as its text: read back exactly as written, on every database.
    PostgreSQL's ``jsonb`` would not: it turns ``1e100`` and ``1e16`` into integers and
    ``-0.0`` into ``0.0``. Nothing queries into a message, so nothing needs ``jsonb``."""

    if TYPE_CHECKING:  # any JSON value in and out, not text (what django-stubs reads)
        _pyi_private_set_type: Any
        _pyi_private_get_type: Any

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        return value  # already the JSON value (TextField's would make it text)

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    def value_to_string(self, obj: Any) -> str:
        return str(self.get_prep_value(self.value_from_object(obj)))


class ConversationMessage(Tenanted):
    """One message of a conversation, at its position: written once, never edited (a
    truncate deletes the tail; signed provider blocks stay exactly as stored)."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages", db_constraint=True
    )
    position = models.PositiveIntegerField(_("position"))
    message = JSONTextField(_("message"))

    class Meta:
        db_table = "warlock_conversation_messages"
        verbose_name = _("conversation message")
        verbose_name_plural = _("conversation messages")
        ordering = ["conversation", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "position"], name="warlock_message_position_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id}#{self.position}"

    @property
    def opened_message(self) -> Any:
        """The message as kept, opened if it was sealed (``ENCRYPTION_KEYS``)."""
        return open_json(self.message, *message_place(self.conversation_id, self.position))


#: The longest scope and namespace a cache entry may have.
MAX_CACHE_SCOPE_LENGTH = 300
MAX_CACHE_NAMESPACE_LENGTH = 200


class CacheEntry(Tenanted):
    """One cached answer of the semantic cache (``cache.DjangoCacheStore``): read only in its
    namespace and scope, never after ``expires_at``. ``vector`` is the question's embedding
    as little-endian float32 (no database extension needed)."""

    namespace = models.CharField(_("namespace"), max_length=MAX_CACHE_NAMESPACE_LENGTH)
    scope = models.CharField(_("scope"), max_length=MAX_CACHE_SCOPE_LENGTH)
    key = models.CharField(_("key"), max_length=64)
    question = models.TextField(_("question"))
    reply = JSONTextField(_("reply"))
    vector = models.BinaryField(_("vector"), null=True, blank=True)
    stored_at = models.DateTimeField(_("stored"))
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True, db_index=True)

    class Meta:
        db_table = "warlock_cache_entries"
        verbose_name = _("cached answer")
        verbose_name_plural = _("cached answers")
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "scope", "key"], name="warlock_cache_entry_unique"
            )
        ]
        indexes = [models.Index(fields=["scope", "namespace", "id"], name="warlock_cache_scope")]

    @property
    def value_place(self) -> tuple[str, ...]:
        """What its sealed question and reply are bound to (``encryption.cache_place``)."""
        return cache_place(self.namespace, self.scope, self.key)

    def __str__(self) -> str:
        return f"{self.scope} {self.key[:12]}"


class CacheScope(models.Model):
    """How often answers were removed from one namespace and scope (``DjangoCacheStore``): a
    process that keeps the scope's vectors reads this and the newest row id to know whether
    rows were only added since (read those alone) or some removed (read all again)."""

    namespace = models.CharField(_("namespace"), max_length=MAX_CACHE_NAMESPACE_LENGTH)
    scope = models.CharField(_("scope"), max_length=MAX_CACHE_SCOPE_LENGTH)
    removals = models.PositiveBigIntegerField(_("removals"), default=0)

    class Meta:
        db_table = "warlock_cache_scopes"
        verbose_name = _("cache scope")
        verbose_name_plural = _("cache scopes")
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "scope"], name="warlock_cache_scope_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.namespace} {self.scope}"
