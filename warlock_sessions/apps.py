from typing import Any

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WarlockSessionsConfig(AppConfig):
    name = "warlock_sessions"
    verbose_name = _("Warlock sessions")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from . import checks  # noqa: F401  (registers the system checks)

        user_logged_in.connect(_adopt_on_login, dispatch_uid="warlock_sessions.adopt")


def _adopt_on_login(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """A visitor who logs in mid-chat keeps their conversation."""
    from .permissions import adopt_visitor_sessions

    if request is not None:
        adopt_visitor_sessions(user, request)
