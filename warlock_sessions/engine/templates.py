"""``{{data.x}}``, ``{{context.x}}`` and ``{{input.x}}`` substitution in prompts, says and params.

``{{data.name|there}}`` gives a fallback: the text after ``|``, used when the path resolves to
nothing. What a user reads never shows a placeholder: a path that resolves to nothing and has
no fallback is blank, and the gap it leaves is closed ("Ola {{context.lead.name}}, tudo bem?"
sends "Ola, tudo bem?"); ``unresolved`` hears of each such path, so the engine can log it.
Flows are checked at load for the ones that can be caught (``placeholders``). Action params
and flow targets, read by code rather than people, keep an unresolved placeholder inside other
text as written (``keep_missing``), so a typo stays visible there; a param that is one
placeholder alone is its value, ``None`` when unknown (``render_deep``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{\s*([^}|\s]+)\s*(?:\|([^}]*))?\}\}")
_ABSENT = object()
_MISSING = object()


def render(
    template: str,
    scope: Mapping[str, Any],
    *,
    keep_missing: bool = False,
    unresolved: Callable[[str], None] | None = None,
) -> str:
    emptied = False

    def substitute(match: re.Match[str]) -> str:
        nonlocal emptied
        value = _lookup(scope, match[1].split("."))
        if value is _MISSING or value is None or value is _ABSENT:
            if match[2] is not None:
                text = match[2].strip()
            elif keep_missing and value is not _ABSENT:
                return match[0]
            else:
                if value is not _ABSENT and unresolved is not None:
                    unresolved(match[1])
                text = ""
        else:
            text = _stringify(value)
        if text == "":
            emptied = True
        return text

    out = _PLACEHOLDER.sub(substitute, template)
    return _tidy(out) if emptied else out


#: A text a person reads: one string, or one per language (``{"en": "Hi", "pt": "Oi"}``).
Text = str | Mapping[str, str]


def localized(text: Text, language: str | None) -> str:
    """``text`` in ``language``: a plain string as it is; of several, the one in that
    language, else English, else the first."""
    if isinstance(text, str):
        return text
    if language in text:
        return text[language]  # type: ignore[index]
    return text.get("en") or next(iter(text.values()), "")


def written_in(text: Text, language: str | None) -> bool:
    """Whether ``text`` has its own words for ``language``: one string is the author's for
    every language; of several, one must be in it."""
    return isinstance(text, str) or language in text


def label_language(labels: Sequence[Text | None], language: str | None) -> str | None:
    """The language a sentence naming these labels is written in: ``language`` when each
    has its words for it, else the one ``localized`` falls back to, so that no sentence mixes
    two ("Qual é o seu size?"). A missing label is the field's name: English, as code is."""
    for label in labels:
        if label is None:
            if language not in (None, "en"):
                return "en"
        elif not written_in(label, language):
            return "en" if "en" in label else next(iter(label), language)
    return language


def texts_of(text: Text) -> list[str]:
    """Every variant of ``text``."""
    return [text] if isinstance(text, str) else list(text.values())


def placeholders(template: str) -> Iterator[tuple[str, str | None]]:
    """Each placeholder's path and fallback (``None`` when it has none)."""
    for match in _PLACEHOLDER.finditer(template):
        yield match[1], match[2]


def render_deep(value: Any, scope: Mapping[str, Any]) -> Any:
    """``render`` over every string inside a JSON-like value (an action's ``with``). A string
    that is one placeholder alone gives the value itself, keeping its type: ``null`` when it is
    not known (a field given up), or its fallback text; one inside other text stays as written
    when it resolves to nothing, so a typo stays visible."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole is not None:
            found = _lookup(scope, whole[1].split("."))
            if found is not _MISSING and found is not _ABSENT and found is not None:
                return found
            return whole[2].strip() if whole[2] is not None else None
        return render(value, scope, keep_missing=True)
    if isinstance(value, list | tuple):
        return [render_deep(item, scope) for item in value]
    if isinstance(value, dict):
        return {key: render_deep(item, scope) for key, item in value.items()}
    return value


def _lookup(root: Any, keys: list[str]) -> Any:
    current = root
    for key in keys:
        if current is None:
            return _ABSENT
        if isinstance(current, Mapping):
            current = current.get(key, _MISSING)
        elif isinstance(current, list) and key.isdigit() and int(key) < len(current):
            current = current[int(key)]
        else:
            return _MISSING
        if current is _MISSING:
            return _MISSING
    return current


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    if isinstance(value, list):
        return ", ".join(_stringify(item) for item in value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tidy(text: str) -> str:
    text = re.sub(r"(?<=\S)[ \t]{2,}", " ", text)
    text = re.sub(r" +([,.;:!?\u2026])", r"\1", text)
    text = re.sub(r",(?=[.;:!?\u2026])", "", text)
    return re.sub(r"[ \t]+$", "", text, flags=re.MULTILINE)
