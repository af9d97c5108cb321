"""SemanticCache: answers to chat-model calls reused only where they are safe
(docs/cache.md).

A call is looked up in two steps. The **exact** step is keyed on everything that shapes the
answer: the provider, the model and its settings, the tool schemas, and the whole message
list (system prompt included), normalised. The **similarity** step (opt-in: a ``threshold``
and an ``embedder``) embeds the question *in its context* (the last assistant turn, then the
user's text) and takes the nearest entry of the same scope above the threshold, unless the
question has fewer than three content words, or the two differ in their numbers, negations
or by a word and its opposite.

Scope fails closed: the default is the conversation (a call with none is not cached);
``"shared"`` pools every caller and must be asked for; a resolver returning nothing means no
caching for that call. Only a turn's first call is cached, and only a whole answer: no tool
calls, a normal stop, nothing the ``guard`` flagged. Entries live ``ttl`` seconds from when
they were stored, whatever hits them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CacheNotConfiguredError, CacheUnsupportedError
from ..providers.chat import ChatModel, ChatReply, Message, OnDelta, ToolSchema, content_text
from ..providers.embedders import Embedder
from ..redaction import is_personal
from ..tenancy import current as current_tenant
from .base import CacheStore, Entry, live, now
from .questions import mismatch, unaskable

logger = logging.getLogger("warlock_sessions.cache")

#: Settings of a model that shape its answers, where it has them.
MODEL_SETTINGS = ("temperature", "top_p", "max_tokens", "structured_output", "seed")
#: How much of the last assistant turn goes into the question's context.
CONTEXT_CHARACTERS = 300
#: Nearest entries the similarity step considers.
CANDIDATES = 5
#: The longest ``ttl``: ten years (``None`` keeps answers until they are removed).
MAX_TTL = 10 * 365 * 24 * 3600.0


def _scored(row: object) -> bool:
    """Whether ``row`` is what ``similar`` returns: a (score, entry) pair."""
    return (
        isinstance(row, tuple | list)
        and len(row) == 2
        and isinstance(row[0], int | float)
        and not isinstance(row[0], bool)
    )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class CacheCall:
    """One call to a chat model as the cache sees it: ``conversation`` is the id of the
    conversation (or session) it belongs to, ``first`` whether it is the first call of its
    turn, ``context`` whatever a scope resolver reads (the run's options)."""

    model: ChatModel
    messages: list[Message]
    tools: list[ToolSchema]
    conversation: str | None = None
    first: bool = True
    context: Any = None


@dataclass
class Lookup:
    """What the lookup decided: a ``hit`` to answer with, or what to store after the call."""

    hit: ChatReply | None = None
    namespace: str = ""
    scope: str | None = None
    key: str = ""
    question: str = ""
    context: str = ""  # the assistant turn the question followed
    shape: str = ""  # everything but the conversation's turns (``call_shape``)
    vector: list[float] | None = None
    storable: bool = False


@dataclass
class CacheStats:
    """Counters, for operators: ``hits`` by step, ``misses``, ``refusals`` by reason, and
    ``nearest_on_miss``, the best similarity the last miss found (how near the threshold
    traffic runs)."""

    hits: Counter[str] = field(default_factory=Counter)
    misses: int = 0
    refusals: Counter[str] = field(default_factory=Counter)
    nearest_on_miss: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def hit(self, step: str) -> None:
        with self._lock:
            self.hits[step] += 1

    def miss(self, nearest: float | None) -> None:
        with self._lock:
            self.misses += 1
            self.nearest_on_miss = nearest

    def refuse(self, reason: str) -> None:
        with self._lock:
            self.refusals[reason] += 1


def _configured_store(store: CacheStore | None) -> CacheStore:
    """``store``, or the one ``CACHE_STORE`` configures."""
    if store is None:
        from . import default_cache_store

        store = default_cache_store()
    if store is None:
        raise CacheNotConfiguredError(
            'a semantic cache needs a store: pass store= or set WARLOCK_SESSIONS["CACHE_STORE"]'
        )
    return store


def _check_similarity(store: CacheStore, embedder: Embedder | None, threshold: Any) -> None:
    """A similarity threshold is a number in (0, 1], with an embedder and a store that
    searches by similarity."""
    if not _number(threshold) or not 0 < threshold <= 1:
        raise ValueError(f"threshold is a similarity above 0 and at most 1, not {threshold!r}")
    if embedder is None:
        raise ValueError("a similarity threshold needs an embedder")
    if not store.similarity:
        raise CacheUnsupportedError(
            f"{type(store).__name__} has no similarity search: drop threshold= for "
            "exact repeats only, or use a store that has one"
        )


class SemanticCache:
    def __init__(
        self,
        *,
        store: CacheStore | None = None,
        embedder: Embedder | None = None,
        threshold: float | None = None,
        ttl: float | None = 3600.0,
        scope: str | Callable[[CacheCall], str | None] = "conversation",
        namespace: str = "default",
        version: int = 1,
        guard: Callable[[ChatReply], bool] | None = None,
        paraphrases: bool = False,
    ) -> None:
        store = _configured_store(store)
        if threshold is not None:
            _check_similarity(store, embedder, threshold)
        if ttl is not None and (not _number(ttl) or not 0 < ttl < MAX_TTL):
            raise ValueError(
                f"ttl is a number of seconds above 0 (under ten years), or None, not {ttl!r}"
            )
        if scope not in ("conversation", "shared") and not callable(scope):
            raise ValueError(f"scope is 'conversation', 'shared' or a function, not {scope!r}")
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(f"namespace is non-empty text, not {namespace!r}")
        if type(version) is not int:
            raise ValueError(f"version is a whole number, not {version!r}")
        self.store = store
        self.embedder = embedder
        self.threshold = threshold
        self.ttl = ttl
        self.scope = scope
        self.guard = guard
        #: Whether a similar question may use other words (tune the threshold first).
        self.paraphrases = bool(paraphrases)
        # Vectors of two embedders are not comparable, and a new version leaves every older
        # entry behind: both are part of where entries live.
        self.namespace = f"{namespace}:v{version}:{embedder.name if embedder else 'exact'}"
        self.stats = CacheStats()

    # -- the call ------------------------------------------------------------------------------

    def chat(self, call: CacheCall, on_delta: OnDelta | None = None) -> ChatReply:
        """The cached answer to ``call``, or the model's (stored when it may be). Outside
        every tenant's scope (the operator), a call in a tenant's conversation reads and
        writes that tenant's answers."""
        # Imported here: an agent with a cache may be built before the apps are ready.
        from ..models import in_the_tenant_of

        with in_the_tenant_of(call.conversation):
            return self._chat(call, on_delta)

    def _chat(self, call: CacheCall, on_delta: OnDelta | None) -> ChatReply:
        found = self.lookup(call)
        if found.hit is not None:
            if on_delta is not None and found.hit.text:
                on_delta(found.hit.text)
            return found.hit
        reply = call.model.chat(call.messages, call.tools, on_delta)
        self.remember(found, reply)
        return reply

    def lookup(self, call: CacheCall) -> Lookup:
        if not call.first:
            return self._refused("later-call")
        try:
            scope = self.scope_of(call)
        except Exception:  # a resolver that fails caches nothing (fails closed)
            logger.warning("the cache's scope resolver failed", exc_info=True)
            return self._refused("scope-failed")
        if scope is None:
            return self._refused("no-scope")
        question = _last_text(call.messages, "user")
        if not question.strip():
            return self._refused("no-question")
        if is_personal(question) or is_personal(_last_text(call.messages, "assistant")):
            # Neither its key, its embedding nor its answer may keep what REDACT takes out.
            return self._refused("personal-data")
        try:
            key, shape = exact_key(call), call_shape(call)
        except Exception:  # a message the fingerprint cannot read: the model answers it
            logger.warning("could not fingerprint a call for the cache", exc_info=True)
            return self._refused("key-failed")
        namespace = self.tenant_namespace()
        found = Lookup(
            namespace=namespace,
            scope=scope,
            key=key,
            question=question,
            context=_last_text(call.messages, "assistant")[-CONTEXT_CHARACTERS:],
            shape=shape,
            storable=True,
        )
        entry = self._read(lambda: self.store.get(namespace, scope, found.key))
        if entry is not None and self._servable(found, entry, exact=True):
            return self._hit(found, entry, "exact")
        nearest = None
        if self.threshold is not None:
            nearest = self._similar(call, found)
            if found.hit is not None:
                return found
        self.stats.miss(nearest)
        return found

    def remember(self, found: Lookup, reply: ChatReply) -> None:
        """Store ``reply`` as the answer ``found`` missed, unless it must not be."""
        if not found.storable or found.scope is None:
            return
        reason = _not_storable(reply)
        if reason is None and is_personal(reply.text):
            reason = "personal-data"
        if reason is None and self.guard is not None:
            try:
                reason = "guard" if self.guard(reply) else None
            except Exception:  # a guard that fails flags the answer: not stored
                logger.warning("the cache's guard failed", exc_info=True)
                reason = "guard-failed"
        if reason is not None:
            self.stats.refuse(reason)
            return
        stored = now()
        entry: Entry = {
            "namespace": found.namespace,
            "scope": found.scope,
            "key": found.key,
            "question": found.question,
            # What answered, and what it was asked under: another shape or another turn
            # before the question is never served this answer.
            "reply": {"text": reply.text, "shape": found.shape, "askedAfter": found.context},
            "vector": found.vector,
            "storedAt": stored,
            "expiresAt": None if self.ttl is None else stored + self.ttl,
        }
        try:
            self.store.put(entry)
        except Exception:  # a cache that cannot write costs hits, never the answer
            self.stats.refuse("store-failed")
            logger.warning("could not store a cached answer", exc_info=True)

    def scope_of(self, call: CacheCall) -> str | None:
        """Where the call's entries live; ``None``: the call is not cached (fails closed)."""
        if self.scope == "shared":
            return "shared"
        if self.scope == "conversation":
            return f"conversation:{call.conversation}" if call.conversation else None
        assert callable(self.scope)
        chosen = self.scope(call)
        return f"scope:{chosen}" if isinstance(chosen, str) and chosen else None

    def forget_conversation(self, conversation_id: str) -> int:
        """Remove what was cached for a conversation (it was deleted, or its id starts a new
        one): only the ``conversation`` scope's entries are the conversation's."""
        return self.store.forget_scope(f"conversation:{conversation_id}")

    def clear(self) -> int:
        """Remove every answer of this cache (its namespace, version and embedder), in the
        current tenant."""
        return self.store.clear(self.tenant_namespace())

    def tenant_namespace(self) -> str:
        """Where this cache's answers live in the current tenant (``tenancy``): no answer,
        not even a ``shared`` one, is read across tenants, in any store."""
        tenant = current_tenant()
        return self.namespace if tenant is None else f"{self.namespace}@{tenant}"

    # -- the steps -----------------------------------------------------------------------------

    def _similar(self, call: CacheCall, found: Lookup) -> float | None:
        """Looks the question up by similarity, setting ``found.hit`` on a hit; the best
        score seen."""
        unasked = unaskable(found.question)
        if unasked is not None:
            self.stats.refuse(unasked)
            return None
        assert self.embedder is not None and found.scope is not None
        try:
            found.vector = checked_vector(
                self.embedder.embed(f"{found.context}\n{found.question}".strip())
            )
        except Exception:  # no embedding: exact repeats only
            self.stats.refuse("embedder-failed")
            logger.warning("could not embed a question for the cache", exc_info=True)
            return None
        scope, vector = found.scope, found.vector
        ranked = (
            self._read(lambda: self.store.similar(found.namespace, scope, vector, CANDIDATES)) or []
        )
        assert self.threshold is not None
        if not isinstance(ranked, list) or not all(_scored(row) for row in ranked):
            self.stats.refuse("store-mismatch")
            logger.warning("the cache store's similar() returned what is not [(score, entry)]")
            return None
        for score, entry in ranked:
            if not score >= self.threshold:  # NaN is no match either
                break
            if not self._servable(found, entry, exact=False):
                continue
            why = self._mismatch(found, entry, self.paraphrases)
            if why is not None:
                self.stats.refuse(f"mismatch-{why}")
                continue
            self._hit(found, entry, "similar")
            return float(score)
        return float(ranked[0][0]) if ranked else None

    def _servable(self, found: Lookup, entry: Any, *, exact: bool) -> bool:
        """Whether an entry the store returned is one this call may be served: of its
        namespace and scope, live, and (an exact hit) of its key and shape. A store checks
        this too; checked again here, a store's bug or a colliding key serves nobody another
        caller's answer."""
        reply = entry.get("reply") if isinstance(entry, dict) else None
        servable = (
            isinstance(reply, dict)
            and isinstance(reply.get("text"), str)
            and bool(reply["text"].strip())
            and (entry.get("namespace"), entry.get("scope")) == (found.namespace, found.scope)
            and (entry.get("expiresAt") is None or _number(entry.get("expiresAt")))
            and live(entry, now())
            and (not exact or (entry.get("key"), reply.get("shape")) == (found.key, found.shape))
        )
        if not servable:
            self.stats.refuse("store-mismatch")
            logger.warning("the cache store returned an entry this call may not be served")
        return servable

    @staticmethod
    def _mismatch(found: Lookup, entry: Entry, paraphrases: bool) -> str | None:
        stored = entry.get("reply")
        reply: dict[str, Any] = stored if isinstance(stored, dict) else {}
        if reply.get("shape") != found.shape:
            return "shape"
        asked_after = str(reply.get("askedAfter") or "")
        candidate = str(entry.get("question", ""))
        return mismatch(
            found.question, candidate, found.context, asked_after, paraphrases=paraphrases
        )

    def _read(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except Exception:  # an unreachable cache is a miss
            self.stats.refuse("store-failed")
            logger.warning("could not read the cache", exc_info=True)
            return None

    def _hit(self, found: Lookup, entry: Entry, step: str) -> Lookup:
        self.stats.hit(step)
        logger.info("cache hit (%s) in %s", step, found.scope)
        text = str((entry.get("reply") or {}).get("text", ""))
        found.hit = ChatReply(text=text, usage={}, cached=step)
        found.storable = False
        return found

    def _refused(self, reason: str) -> Lookup:
        self.stats.refuse(reason)
        return Lookup()


def semantic_cache(**options: Any) -> SemanticCache:
    """``SemanticCache(**options)``, as upstream's ``semanticCache({...})`` reads."""
    return SemanticCache(**options)


def model_settings(model: Any) -> dict[str, Any]:
    """What of a model shapes its answers: its own ``cache_settings()`` where it has one
    (``OpenAICompatibleModel``: its server, output limit, temperature, structured output),
    else the ``MODEL_SETTINGS`` attributes it has."""
    own = getattr(model, "cache_settings", None)
    if callable(own):
        return dict(own())
    return {name: getattr(model, name) for name in MODEL_SETTINGS if hasattr(model, name)}


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def exact_key(call: CacheCall) -> str:
    """The fingerprint of everything that shapes the answer, as 64 hex digits: the model,
    its settings, the tools, and every message (text in Unicode NFC, whitespace kept: two
    programs that differ only by indentation are two programs)."""
    return _digest(
        {
            "provider": getattr(call.model, "provider", None),
            "model": getattr(call.model, "model", None),
            "settings": model_settings(call.model),
            "tools": [[tool.name, tool.description, tool.parameters] for tool in call.tools],
            "messages": [_normalised(message) for message in call.messages],
        }
    )


def call_shape(call: CacheCall) -> str:
    """The fingerprint of everything but the conversation's turns: the model, its settings,
    the tools, the system messages, and what the question carries besides its text
    (attachments). A similar question is served only an answer of the same shape."""
    last_user = next(
        (message for message in reversed(call.messages) if message.get("role") == "user"), {}
    )
    content = last_user.get("content")
    return _digest(
        {
            "provider": getattr(call.model, "provider", None),
            "model": getattr(call.model, "model", None),
            "settings": model_settings(call.model),
            "tools": [[tool.name, tool.description, tool.parameters] for tool in call.tools],
            "system": [
                _normalised(message) for message in call.messages if message.get("role") == "system"
            ],
            "parts": None if isinstance(content, str) else content,
        }
    )


def checked_vector(vector: list[float]) -> list[float]:
    """``vector`` if every value is a finite number, else ``ValueError`` (a NaN would score
    above any threshold, or below none)."""
    if not vector or not all(
        isinstance(value, float | int) and math.isfinite(value) for value in vector
    ):
        raise ValueError("an embedding holds a value that is not a finite number")
    return vector


def _normalised(message: Message) -> Any:
    """A message with its text in Unicode NFC (the parts of a content that is not text,
    attachments included, kept as they are)."""
    content = message.get("content")
    text = unicodedata.normalize("NFC", content_text(content))
    rest = {key: value for key, value in message.items() if key != "content"}
    return {**rest, "content": text, "parts": None if isinstance(content, str) else content}


def _last_text(messages: list[Message], role: str) -> str:
    for message in reversed(messages):
        if message.get("role") == role:
            return content_text(message.get("content"))
    return ""


def _not_storable(reply: ChatReply) -> str | None:
    if reply.tool_calls:
        return "tool-calls"
    if reply.finish_reason != "stop":
        return "unfinished"
    if not reply.text.strip():
        return "empty"
    return None
