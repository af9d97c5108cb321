"""Where a model provider is reached: its base URL, checked without importing an HTTP client
(the system checks run it whether or not the ``openai`` extra is installed)."""

from __future__ import annotations

from urllib.parse import urlsplit


def check_base_url(base_url: str) -> str:
    """``base_url`` without its trailing slash, if it is an http(s) URL with a host."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"base_url must be an http(s) URL with a host, like "
            f"'https://api.openai.com/v1', not {base_url!r}"
        )
    return base_url.rstrip("/")
