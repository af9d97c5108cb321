"""LangGraph's state on this app's tables (extra ``[langgraph]``): ``WarlockSaver`` keeps a
graph's checkpoints (short-term memory, human in the loop, time travel) and ``WarlockStore``
its long-term memory. docs/frameworks/langgraph.md."""

from .checkpointer import AsyncWarlockSaver, WarlockSaver
from .store import WarlockStore

__all__ = ["AsyncWarlockSaver", "WarlockSaver", "WarlockStore"]
