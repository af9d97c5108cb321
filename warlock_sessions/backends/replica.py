"""Where lists read: ``WARLOCK_SESSIONS["READ_REPLICA"]`` when set, else the router's choice.
Only lists and searches go there; one session's own reads stay where it is written."""

from __future__ import annotations

from django.db import models, router

from ..conf import warlock_settings


def list_database(model: type[models.Model]) -> str:
    """The database alias a list of ``model``'s rows reads from."""
    return warlock_settings.READ_REPLICA or router.db_for_read(model) or "default"
