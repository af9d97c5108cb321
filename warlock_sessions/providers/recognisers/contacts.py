"""E-mail addresses and phone numbers."""

from __future__ import annotations

import re

# A match starts only where a run of address characters starts: searching from every position
# inside a long run would rescan the rest of it each time (quadratic in the run's length).
EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
PHONE = re.compile(r"(?<![\w@])\+?\(?\d[\d\s().-]{6,}\d(?![\w@])")


def email(text: str) -> str | None:
    match = EMAIL.search(text)
    return match[0].lower() if match else None


def phone(text: str) -> str | None:
    for match in PHONE.finditer(text):
        digits = re.sub(r"\D", "", match[0])
        if 8 <= len(digits) <= 15:
            return ("+" if match[0].lstrip().startswith("+") else "") + digits
    return None
