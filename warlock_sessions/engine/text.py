"""Text as people's words are compared: lower case, without accents ("Não" is "nao")."""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Lower case without accents: ``"Não, AMANHÃ"`` -> ``"nao, amanha"``."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))
