"""factory-boy factories for the warlock_sessions models (needs ``factory-boy`` and Django)."""

from __future__ import annotations

from typing import Any

import factory
from django.utils import timezone

from ..engine.session import encode_session
from ..models import Session, run_summary
from .blobs import session_blob


class SessionFactory(factory.django.DjangoModelFactory):
    """A stored session row whose blob is a valid v4 session.

    Pass ``runs=[run_blob(...), ...]`` and ``data={...}`` (or a whole ``session=``) to choose
    what it holds; the derived columns follow the blob, as if a Store had saved it.
    """

    class Meta:
        model = Session
        exclude = ("runs", "data", "session")

    id = factory.Sequence(lambda n: f"session-{n}")
    version = 1
    agent = ""
    runs: list[Any] = []
    data: dict[str, Any] = {}
    session = factory.LazyAttribute(lambda o: session_blob(o.id, runs=o.runs, data=o.data))
    blob = factory.LazyAttribute(lambda o: encode_session(o.session, o.version))
    run_flows = factory.LazyAttribute(lambda o: run_summary(o.session)["run_flows"])
    run_statuses = factory.LazyAttribute(lambda o: run_summary(o.session)["run_statuses"])
    search_text = factory.LazyAttribute(lambda o: run_summary(o.session)["search_text"])
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyFunction(timezone.now)
