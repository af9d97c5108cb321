"""The demo's free-form assistant: a ToolAgent on the offline chat model, so `make demo` needs
no network. It remembers what it was told, streams its replies word by word, and calls its
tools when a message names them ("calculate 12*7", "what time is it")."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from warlock_sessions.cache import DjangoCacheStore, semantic_cache
from warlock_sessions.conversations import ToolAgent, tool
from warlock_sessions.providers import OfflineChatModel, OfflineEmbedder

_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return float(_OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    raise ValueError("only numbers with + - * / and brackets")


@tool
def calculate(expression: str) -> str:
    """Work out an arithmetic expression such as 12*7 or (3+4)/2."""
    if len(expression) > 200:
        raise ValueError("that expression is too long")
    try:
        value = _evaluate(ast.parse(expression.replace("x", "*"), mode="eval").body)
    except (SyntaxError, ZeroDivisionError) as error:
        raise ValueError(f"cannot work out {expression!r}") from error
    return f"{expression} = {value:g}"


@tool
def time() -> str:
    """The current time, in UTC."""
    return datetime.now(UTC).strftime("%H:%M UTC on %A %d %B %Y")


assistant = ToolAgent(
    OfflineChatModel(delay=0.04),
    system_prompt="You are the warlock_sessions demo assistant. Be brief and friendly.",
    tools=[calculate, time],
    compaction={"after_tokens": 4000, "keep": 6},
    name="demo-assistant",
    # Ask something, undo the turn, ask it again: the same call is answered from the cache
    # at once, marked so on the page. Scoped to the chat (a fork, which asks for another
    # answer, has its own), with the threshold `manage.py warlock_cache_eval` finds for the
    # offline embedder.
    cache=semantic_cache(
        store=DjangoCacheStore(), embedder=OfflineEmbedder(), threshold=0.45, ttl=600
    ),
)
