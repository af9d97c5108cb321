"""The semantic cache on the chat port: exact repeats, similarity only where it is safe,
scope failing closed, refusals, freshness. Each test names the peer failure it guards
against (docs/cache.md#what-it-refuses)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from warlock_sessions.cache import CacheCall, MemoryCacheStore, SemanticCache
from warlock_sessions.cache.base import CacheStore
from warlock_sessions.conversations import ToolAgent, session, tool
from warlock_sessions.errors import CacheNotConfiguredError, CacheUnsupportedError
from warlock_sessions.providers import OfflineEmbedder
from warlock_sessions.providers.chat import ChatReply


@dataclass
class CountingModel:
    """Answers "answer N" to its Nth call (or what ``replies`` says), counting the calls."""

    provider: str = "test"
    model: str = "m1"
    temperature: float = 0.0
    calls: int = 0
    replies: list[ChatReply] = field(default_factory=list)

    def chat(self, messages: Any, tools: Any, on_delta: Any) -> ChatReply:
        self.calls += 1
        if self.replies:
            return self.replies.pop(0)
        return ChatReply(text=f"answer {self.calls}")

    def summarize(self, messages: Any) -> str:
        return ""


def ask(text: str, context: str | None = None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    if context is not None:
        messages += [
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": context},
        ]
    return [*messages, {"role": "user", "content": text}]


def call(model: Any, text: str, conversation: str | None = "c1", **more: Any) -> CacheCall:
    return CacheCall(model, ask(text, more.pop("context", None)), [], conversation, **more)


def similar_cache(**options: Any) -> SemanticCache:
    options.setdefault("threshold", 0.8)
    return SemanticCache(store=MemoryCacheStore(), embedder=OfflineEmbedder(), **options)


def test_an_exact_repeat_is_served_and_nothing_else_is() -> None:
    model, cache = CountingModel(), SemanticCache(store=MemoryCacheStore())
    first = cache.chat(call(model, "Café opening hours?"))
    again = cache.chat(call(model, "Cafe\u0301 opening hours?"))  # the same text, in NFC
    assert (first.text, again.text, again.cached, model.calls) == (
        "answer 1",
        "answer 1",
        "exact",
        1,
    )
    assert (
        cache.chat(call(model, "Café  opening hours?")).text == "answer 2"
    )  # code keeps its spaces
    other_model = CountingModel(model="m2")
    assert cache.chat(call(other_model, "Café opening hours?")).cached == ""
    warmer = CountingModel(temperature=0.9)
    assert cache.chat(call(warmer, "Café opening hours?")).cached == ""
    assert cache.stats.hits["exact"] == 1


def test_the_default_scope_is_the_conversation_and_none_means_no_caching() -> None:
    """Peers: one user served another's byte-identical answer."""
    model, cache = CountingModel(), SemanticCache(store=MemoryCacheStore())
    cache.chat(call(model, "What is my account balance?", "alice"))
    assert cache.chat(call(model, "What is my account balance?", "bob")).text == "answer 2"
    assert cache.chat(call(model, "What is my account balance?", None)).text == "answer 3"
    assert cache.chat(call(model, "What is my account balance?", None)).text == "answer 4"
    assert cache.stats.refusals["no-scope"] == 2


def test_shared_is_asked_for_and_a_resolver_that_returns_nothing_fails_closed() -> None:
    model = CountingModel()
    shared = SemanticCache(store=MemoryCacheStore(), scope="shared")
    shared.chat(call(model, "Where is the museum?", "alice"))
    assert shared.chat(call(model, "Where is the museum?", "bob")).cached == "exact"

    tenants = {"alice": "acme", "bob": "acme", "carol": "globex"}
    by_tenant = SemanticCache(
        store=MemoryCacheStore(), scope=lambda c: tenants.get(c.conversation or "")
    )
    by_tenant.chat(call(model, "Where is the museum?", "alice"))
    assert by_tenant.chat(call(model, "Where is the museum?", "bob")).cached == "exact"
    assert by_tenant.chat(call(model, "Where is the museum?", "carol")).cached == ""
    assert by_tenant.chat(call(model, "Where is the museum?", "mallory")).cached == ""
    assert by_tenant.chat(call(model, "Where is the museum?", "mallory")).cached == ""
    assert by_tenant.stats.refusals["no-scope"] == 2


def test_only_whole_first_answers_are_stored() -> None:
    """Peers: a tool-call response or a cut-off answer served from the cache."""
    tool_call = ChatReply(
        tool_calls=[{"id": "t1", "name": "x", "input": {}}], finish_reason="tool_calls"
    )
    cut = ChatReply(text="The museum opens at", finish_reason="length")
    flagged = ChatReply(text="something the guard refuses")
    model = CountingModel(replies=[tool_call, cut, flagged])
    cache = SemanticCache(store=MemoryCacheStore(), guard=lambda reply: "refuses" in reply.text)
    for _ in range(3):
        cache.chat(call(model, "When does the museum open?"))
    assert cache.chat(call(model, "When does the museum open?")).text == "answer 4"
    assert cache.chat(call(model, "When does the museum open?", first=False)).text == "answer 5"
    assert cache.chat(call(model, "When does the museum open?")).cached == "exact"
    refused = cache.stats.refusals
    assert (refused["tool-calls"], refused["unfinished"], refused["guard"]) == (1, 1, 1)
    assert refused["later-call"] == 1


def test_similar_questions_are_served_and_near_misses_are_not() -> None:
    """Peers: "enable"/"disable" and "2 people"/"6 people" scored above real paraphrases."""
    model, cache = CountingModel(), similar_cache()
    cache.chat(call(model, "How do I enable two factor authentication on my account?"))
    paraphrase = cache.chat(call(model, "how do I enable two-factor authentication on my account"))
    assert paraphrase.cached == "similar" and paraphrase.text == "answer 1"
    opposite = cache.chat(call(model, "How do I disable two factor authentication on my account?"))
    assert opposite.cached == ""
    cache.chat(call(model, "Book a table for 2 people tonight at the restaurant"))
    assert (
        cache.chat(call(model, "Book a table for 6 people tonight at the restaurant")).cached == ""
    )
    negated = cache.chat(
        call(model, "How do I not enable two factor authentication on my account?")
    )
    assert negated.cached == ""
    refused = cache.stats.refusals
    assert refused["mismatch-wording"] >= 1 and refused["mismatch-numbers"] >= 1
    assert refused["mismatch-negation"] >= 1


def test_short_or_context_free_questions_are_never_served_by_similarity() -> None:
    """Peers: "yes" at turn 7 served turn 3's answer, only the last user message embedded."""
    model, cache = CountingModel(), similar_cache()
    cache.chat(call(model, "yes", context="Shall I book the 7pm table for you?"))
    assert cache.chat(call(model, "yes", context="Shall I cancel your whole order?")).cached == ""
    cache.chat(call(model, "And the price of it?", context="The blue model is in stock."))
    answer = cache.chat(call(model, "And the price of it?", context="The red model is sold out."))
    assert answer.cached == ""
    assert cache.stats.refusals["short-question"] >= 2


def test_entries_expire_from_when_they_were_stored_whatever_hits_them() -> None:
    """Peers: popular answers never expired because every hit refreshed their TTL."""
    model, cache = CountingModel(), SemanticCache(store=MemoryCacheStore(), ttl=0.6)
    cache.chat(call(model, "What are your opening hours?"))
    for _ in range(3):
        time.sleep(0.15)
        assert cache.chat(call(model, "What are your opening hours?")).cached == "exact"
    time.sleep(0.3)
    assert cache.chat(call(model, "What are your opening hours?")).text == "answer 2"


def test_a_new_version_leaves_every_older_entry_behind() -> None:
    model, store = CountingModel(), MemoryCacheStore()
    SemanticCache(store=store).chat(call(model, "What are your opening hours?"))
    newer = SemanticCache(store=store, version=2)
    assert newer.chat(call(model, "What are your opening hours?")).cached == ""


def test_what_cannot_work_is_refused_when_built() -> None:
    with pytest.raises(CacheNotConfiguredError):
        SemanticCache()

    class ExactOnly(MemoryCacheStore):
        similarity = False

    with pytest.raises(CacheUnsupportedError):
        SemanticCache(store=ExactOnly(), embedder=OfflineEmbedder(), threshold=0.9)
    SemanticCache(store=ExactOnly())  # exact repeats need no similarity
    with pytest.raises(ValueError, match="needs an embedder"):
        SemanticCache(store=MemoryCacheStore(), threshold=0.9)
    with pytest.raises(ValueError, match="threshold"):
        SemanticCache(store=MemoryCacheStore(), embedder=OfflineEmbedder(), threshold=1.5)
    with pytest.raises(ValueError, match="scope"):
        SemanticCache(store=MemoryCacheStore(), scope="everyone")


def test_a_store_that_is_down_costs_hits_never_answers() -> None:
    from warlock_sessions.cache import RedisCacheStore

    down = RedisCacheStore(url="redis://127.0.0.1:1/0")  # a real client, and nothing there
    model, cache = CountingModel(), SemanticCache(store=down)
    assert cache.chat(call(model, "What are your opening hours?")).text == "answer 1"
    assert cache.chat(call(model, "What are your opening hours?")).text == "answer 2"
    assert cache.stats.refusals["store-failed"] == 4


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_a_tool_agent_uses_it_through_a_conversation_and_forgets_it_when_deleted() -> None:
    from warlock_sessions.snapshots import MemorySnapshotStore

    store = MemoryCacheStore()
    model = CountingModel()
    agent = ToolAgent(model, "Be brief.", cache=SemanticCache(store=store, scope="shared"))
    first = session("c1", MemorySnapshotStore(), agent)
    assert first.send("What are your opening hours?").cached == ""
    events = list(
        session("c2", MemorySnapshotStore(), agent).stream("What are your opening hours?")
    )
    assert model.calls == 1 and {"type": "cached", "step": "exact"} in events
    again = session("c4", MemorySnapshotStore(), agent).send("What are your opening hours?")
    assert again.cached == "exact" and model.calls == 1
    private = ToolAgent(model, "Be brief.", cache=SemanticCache(store=store))
    chat = session("c3", MemorySnapshotStore(), private)
    chat.send("What are your opening hours?")
    assert store.get(private.cache.namespace, "conversation:c3", _only_key(store)) is not None  # type: ignore[union-attr]
    chat.clear()
    assert not any(slot[1] == "conversation:c3" for slot in store._entries)


def _only_key(store: CacheStore) -> str:
    return next(slot[2] for slot in store._entries if slot[1] == "conversation:c3")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            "How do I transfer money from savings to checking?",
            "How do I transfer money from checking to savings?",
        ),
        ("Convert 10 USD to EUR for my trip", "Convert 10 EUR to USD for my trip"),
        ("Is 10.5 euros the delivery price?", "Is 5.10 euros the delivery price?"),
        ("Why do refunds arrive so slowly?", "Why don\u2019t refunds arrive so slowly?"),
        ("Is there a fee for bank transfers?", "Is there no fee for bank transfers?"),
        ("Is the concert ticket refundable?", "Is the concert ticket non-refundable?"),
        ("Book a trip to Austria in summer", "Book a trip to Australia in summer"),
        ("Is the transfer limit 100 dollars?", "Is the transfer limit 100 thousand dollars?"),
        ("Where does my avó live now in Lisbon?", "Where does my avô live now in Lisbon?"),
        ("Do the same for the other order please", "do the same for the other order please"),
    ],
)
def test_what_the_attack_found_is_a_miss(first: str, second: str) -> None:
    """Word order, numbers written otherwise, negation forms, look-alike words, an added
    qualifier, accents, and questions that point back: each was served the other's answer."""
    model, cache = CountingModel(), similar_cache(threshold=0.01)  # every score gets checked
    cache.chat(call(model, first, context="Your order is on its way."))
    assert cache.chat(call(model, second, context="Your order is on its way.")).cached == ""
    reasons = set(cache.stats.refusals)
    assert reasons & {
        "refers-back",
        "mismatch-numbers",
        "mismatch-negation",
        "mismatch-wording",
        "mismatch-order",
    }


def test_the_same_question_after_another_order_is_a_miss() -> None:
    model, cache = CountingModel(), similar_cache(threshold=0.5)
    question = "What is the total price including shipping?"
    cache.chat(call(model, question, context="Your order #48213 is on its way."))
    again = cache.chat(call(model, question.lower(), context="Your order #77120 is on its way."))
    assert again.cached == "" and cache.stats.refusals["mismatch-context-numbers"] == 1
    same = cache.chat(call(model, question.lower(), context="Your order #48213 is on its way."))
    assert same.cached == "similar"


def test_a_similar_question_under_another_system_prompt_or_attachment_is_a_miss() -> None:
    """A tenant resolver with the user in the system prompt served Alice's balance to Bob."""
    model, cache = CountingModel(), similar_cache(scope=lambda c: "acme")

    def asked(system: str, text: str) -> CacheCall:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": text}]
        return CacheCall(model, messages, [], "c1")

    cache.chat(asked("The user is Alice.", "What is my current account balance right now?"))
    again = cache.chat(asked("The user is Bob.", "what is my current account balance right now"))
    assert again.cached == "" and cache.stats.refusals["mismatch-shape"] == 1
    same = cache.chat(asked("The user is Alice.", "what is my current account balance right now"))
    assert same.cached == "similar"


class NaNEmbedder:
    name, dimensions = "nan", 3

    def embed(self, text: str) -> list[float]:
        return [float("nan"), 0.0, 0.0]


def test_failures_of_the_embedder_resolver_and_guard_are_refusals_never_errors() -> None:
    model = CountingModel()
    nan = SemanticCache(store=MemoryCacheStore(), embedder=NaNEmbedder(), threshold=0.99)
    nan.chat(call(model, "Where can I reset my account password?"))
    assert nan.chat(call(model, "where can I reset my account password")).cached == ""
    assert nan.stats.refusals["embedder-failed"] == 2

    def broken(c: CacheCall) -> str:
        raise KeyError("tenant")

    resolver = SemanticCache(store=MemoryCacheStore(), scope=broken)
    assert resolver.chat(call(model, "Where can I park?")).text.startswith("answer")
    assert resolver.stats.refusals["scope-failed"] == 1

    def guard(reply: ChatReply) -> bool:
        raise RuntimeError("guard down")

    guarded = SemanticCache(store=MemoryCacheStore(), guard=guard)
    assert guarded.chat(call(model, "Where can I park?")).text.startswith("answer")
    assert guarded.chat(call(model, "Where can I park?")).cached == ""  # never stored
    odd = [{"role": "user", "content": [{"type": "text", "text": None}]}]
    assert guarded.chat(CacheCall(model, odd, [], "c1")).text.startswith("answer")
    with pytest.raises(ValueError):
        SemanticCache(store=MemoryCacheStore(), ttl=float("nan"))
    with pytest.raises(ValueError):
        SemanticCache(store=MemoryCacheStore(), ttl=True)


def test_a_new_conversation_under_a_deleted_one_s_id_gets_none_of_its_answers() -> None:
    """An id taken again after a bulk delete was served the old conversation's answers."""
    from warlock_sessions.snapshots import MemorySnapshotStore

    store, model = MemoryCacheStore(), CountingModel()
    agent = ToolAgent(model, "Be brief.", cache=SemanticCache(store=store))
    records = MemorySnapshotStore()
    session("support-1", records, agent).send("What did my blood test say?")
    records.delete("session:support-1")  # deleted in bulk, behind the session's back
    again = session("support-1", records, agent).send("What did my blood test say?")
    assert again.text == "answer 2" and model.calls == 2


def test_two_servers_or_two_temperatures_are_two_keys() -> None:
    from warlock_sessions.cache.semantic import exact_key
    from warlock_sessions.providers import OpenAICompatibleModel

    def key(**options: Any) -> str:
        model = OpenAICompatibleModel(options.pop("url", "http://127.0.0.1:1/v1"), "m", **options)
        return exact_key(CacheCall(model, ask("Where can I park?"), [], "c1"))

    assert key() == key()
    assert key() != key(url="http://127.0.0.1:2/v1")
    assert key() != key(temperature=0.9)


class LeakyStore(MemoryCacheStore):
    """A store with the bugs defence in depth is for: every read answers with whatever
    entry was stored last, whatever namespace, scope or key it was asked for."""

    def get(self, namespace: str, scope: str, key: str) -> Any:
        return self._last

    def similar(self, namespace: str, scope: str, vector: list[float], top_k: int = 3) -> Any:
        return [(1.0, self._last)]

    def put(self, entry: Any) -> None:
        self._last = dict(entry)
        super().put(entry)


def test_an_entry_a_store_returns_is_checked_again_before_it_is_served() -> None:
    """A store's bug or a colliding key must not serve another caller's answer: the entry
    is held to the call's namespace, scope, key, shape and expiry."""
    model, store = CountingModel(), LeakyStore()
    cache = SemanticCache(store=store, embedder=OfflineEmbedder(), threshold=0.5)
    cache.chat(call(model, "What is my current account balance today?", "alice"))
    stolen = cache.chat(call(model, "What is my current account balance today?", "bob"))
    assert stolen.cached == "" and stolen.text == "answer 2"
    other_question = cache.chat(call(model, "Where is the nearest branch of the bank?", "bob"))
    assert other_question.cached == "" and other_question.text == "answer 3"
    store._last = {**store._last, "expiresAt": 1.0}  # expired, and returned all the same
    expired = cache.chat(call(model, "Where is the nearest branch of the bank?", "bob"))
    assert expired.cached == "" and expired.text == "answer 4"
    store._last = {**store._last, "reply": {**store._last["reply"], "shape": "another"}}
    reshaped = cache.chat(call(model, "Where is the nearest branch of the bank?", "bob"))
    assert reshaped.cached == ""
    assert cache.stats.refusals["store-mismatch"] >= 6
    honest = SemanticCache(store=MemoryCacheStore())
    honest.chat(call(model, "Where is the nearest branch of the bank?", "bob"))
    assert honest.chat(call(model, "Where is the nearest branch of the bank?", "bob")).cached


class GarbledStore(MemoryCacheStore):
    """A store whose reads come back malformed: each must cost a hit, never the answer."""

    def __init__(self, rows: Any, entry: Any) -> None:
        super().__init__()
        self.rows, self.entry = rows, entry

    def get(self, namespace: str, scope: str, key: str) -> Any:
        return self.entry

    def similar(self, namespace: str, scope: str, vector: list[float], top_k: int = 3) -> Any:
        return self.rows


@pytest.mark.parametrize(
    "reply",
    [{"shape": "x"}, {"text": None, "shape": "x"}, {"text": "  ", "shape": "x"}],
    ids=["no-text", "none-text", "blank-text"],
)
def test_an_entry_without_an_answer_is_not_served(reply: dict[str, Any]) -> None:
    model = CountingModel()
    store = GarbledStore([], None)
    cache = SemanticCache(store=store)
    found = cache.lookup(call(model, "Where is the nearest branch of the bank?", "bob"))
    store.entry = {"namespace": found.namespace, "scope": found.scope, "key": found.key,
                   "reply": {**reply, "shape": found.shape}, "expiresAt": None}  # fmt: skip
    answer = cache.chat(call(model, "Where is the nearest branch of the bank?", "bob"))
    assert answer.cached == "" and answer.text == "answer 1"


@pytest.mark.parametrize(
    "rows",
    [[("0.9", {})], [(0.9, {}, "x")], {"a": 1}, [None], [(True, {})]],
    ids=["text-score", "triple", "dict", "none", "bool-score"],
)
def test_malformed_similar_rows_are_a_miss_not_an_error(rows: Any) -> None:
    model = CountingModel()
    cache = SemanticCache(store=GarbledStore(rows, None), embedder=OfflineEmbedder(), threshold=0.5)
    answer = cache.chat(call(model, "Where is the nearest branch of the city bank?", "bob"))
    assert answer.text == "answer 1" and cache.stats.refusals["store-mismatch"] == 1
