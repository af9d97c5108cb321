"""``manage.py warlock_erase``: delete every trace of a person (a user, an anonymous visitor,
one session or one conversation) from every table and store this app keeps; docs/privacy.md."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...backends.outages import unavailable
from ...erasure import OTHERS_FORKS, Person, erase, traces_of
from ...errors import InvalidInputError
from ...host.wire import clean_text_param, session_id_input
from ...models import Conversation, Session, SessionOwner
from ...tenancy import EVERY_TENANT, checked_tenant, tenant_scope


class Command(BaseCommand):
    help = (
        "Delete every trace of a person: their sessions (with the event log, outbox, wakes, "
        "applied inputs and owner rows), conversations (with their messages and forks), the "
        "snapshots and checkpoints of those, their cached answers and locks, their LangGraph "
        "threads and memory items and ADK session state; open sockets are told. Prints what "
        "went, per kind of row."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--owner", metavar="USER", help="a user, by username or primary key")
        who.add_argument(
            "--visitor",
            metavar="KEY",
            help="an anonymous visitor, by their key (SessionOwner.anonymous_key)",
        )
        who.add_argument("--session", metavar="ID", help="one session")
        who.add_argument(
            "--conversation",
            metavar="ID",
            help="one conversation (or LangGraph thread, or ADK session) and the forks its "
            "owner made",
        )
        parser.add_argument(
            "--tenant",
            help="only the person's rows of this tenant (TENANT_RESOLVER); without it, every "
            "tenant's",
        )
        parser.add_argument(
            "--others-forks",
            choices=OTHERS_FORKS,
            default="erase",
            help="forks someone else (staff) made of the person's conversations begin with the "
            "person's messages: erase them with the rest (the default), or keep them as they "
            "are; --dry-run names them",
        )
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        person = self._person(options)
        try:
            tenant = None if options["tenant"] is None else checked_tenant(options["tenant"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        # Asked before the erase: once a small tenant's last person is gone, it has no rows.
        unknown = tenant is not None and not any(
            model._base_manager.filter(tenant=tenant).exists()
            for model in (SessionOwner, Conversation, Session)
        )
        try:
            with tenant_scope(EVERY_TENANT if tenant is None else tenant):
                forks = traces_of(person).others_forks
                counts = erase(
                    person,
                    dry_run=options["dry_run"],
                    by="manage.py warlock_erase",
                    others_forks=options["others_forks"],
                )
        except Exception as error:
            _raise_if_unavailable(error)  # nothing of the database's was deleted
            raise
        if unknown:
            self.stderr.write(f"no session or conversation belongs to the tenant {tenant!r}")
        verb = "would delete" if options["dry_run"] else "deleted"
        for what, count in counts.items():
            self.stdout.write(f"{what}: {verb} {count}")
        if forks:
            kept = options["others_forks"] == "keep"
            fate = (
                ("would keep" if kept else "would erase")
                if options["dry_run"]
                else ("kept" if kept else "erased")
            )
            self.stdout.write(
                f"forks others made of the person's conversations ({fate}): " + ", ".join(forks)
            )

    def _person(self, options: dict[str, Any]) -> Person:
        """Whom to erase, each option checked; a visitor's key that owns nothing anywhere is
        refused as an unknown user is (a mistyped key, not a person erased already: one
        erased before has no key left to name either)."""
        try:
            person = Person(
                user=self._user(options["owner"]) if options["owner"] else None,
                visitor=options["visitor"] and clean_text_param("visitor", options["visitor"]),
                session=options["session"] and session_id_input(options["session"], "session"),
                conversation=options["conversation"]
                and session_id_input(options["conversation"], "conversation"),
            )
        except (ValueError, InvalidInputError) as error:
            raise CommandError(str(error)) from None
        if person.visitor and not _visitor_known(person.visitor):
            raise CommandError(
                f"no visitor has the key {person.visitor!r:.80}: nothing of theirs is kept "
                "(the admin's action 'Erase the people of the selected sessions' erases a "
                "session's visitor without their key)"
            )
        return person

    @staticmethod
    def _user(given: str) -> Any:
        users = get_user_model()._default_manager
        found = users.filter(**{get_user_model().USERNAME_FIELD: given}).first()
        if found is None and given.isdigit():
            found = users.filter(pk=int(given)).first()
        if found is None:
            raise CommandError(f"no user {given!r} (by username or primary key)")
        return found.pk


def _visitor_known(key: str) -> bool:
    """Whether anything of any tenant's is the visitor's with ``key``, as the erase finds it."""
    try:
        with tenant_scope(EVERY_TENANT):
            traces = traces_of(Person(visitor=key))
    except Exception as error:
        _raise_if_unavailable(error)
        raise
    return bool(traces.sessions or traces.conversations or traces.threads or traces.memories)


def _raise_if_unavailable(error: Exception) -> None:
    """An outage is a sentence and exit 1, not a traceback: run it again once it is back."""
    if unavailable(error):
        raise CommandError(
            f"the database is unavailable ({error}); run it again once it is back"
        ) from None
