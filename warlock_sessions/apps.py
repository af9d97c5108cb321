from typing import Any

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WarlockSessionsConfig(AppConfig):
    name = "warlock_sessions"
    verbose_name = _("Warlock sessions")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.contrib.auth.signals import user_logged_in
        from django.db.models.signals import post_delete, pre_delete

        from . import (
            checks,  # noqa: F401  (registers the system checks)
            tracing,
        )
        from .conf import on_change, warlock_settings
        from .redaction import install_log_redaction, redact

        install_log_redaction()
        # REDACT set later (override_settings) covers the logs too.
        on_change(install_log_redaction)
        tracing.configure(allowed=lambda: bool(warlock_settings.TRACE_TEXT), redact=redact)

        user_logged_in.connect(_adopt_on_login, dispatch_uid="warlock_sessions.adopt")
        post_delete.connect(
            _forget_deleted,
            sender=self.get_model("Session"),
            dispatch_uid="warlock_sessions.forget",
        )
        pre_delete.connect(
            _give_back_counts,
            sender=settings.AUTH_USER_MODEL,
            dispatch_uid="warlock_sessions.user-counts",
        )


def _forget_deleted(sender: Any, instance: Any, using: str, **kwargs: Any) -> None:
    """A session row deleted with the ORM (the admin, a queryset, a cascade) is forgotten as the
    API forgets one."""
    from .host.notify import forget_session

    forget_session(instance.pk, using)


def _give_back_counts(sender: Any, instance: Any, using: str, **kwargs: Any) -> None:
    """A user deleted takes their session owners and conversations with them, which a
    cascade deletes without asking the rows: their quota counts are given back first."""
    from .models import Conversation, SessionOwner
    from .models.quotas import give_back_rows

    for model in (SessionOwner, Conversation):
        give_back_rows(model._base_manager.using(using).filter(user=instance.pk))


def _adopt_on_login(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """A visitor who logs in mid-chat keeps their conversation."""
    from .permissions import adopt_visitor_sessions

    if request is not None:
        adopt_visitor_sessions(user, request)
