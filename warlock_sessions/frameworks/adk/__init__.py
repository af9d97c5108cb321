"""Google ADK's sessions on this app's tables (extra ``[adk]``): ``WarlockSessionService``.
docs/frameworks/adk.md."""

from .service import WarlockSessionService

__all__ = ["WarlockSessionService"]
