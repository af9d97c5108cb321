"""How the OpenAI wire format fails, as the engine's provider codes (docs/providers.md): HTTP
error replies, rate-limit reset headers and transport failures. Pure, except ``send``."""

from __future__ import annotations

import email.utils
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx

from ...engine.ports import ProviderError

T = TypeVar("T")
QUOTA_CODES = frozenset({"insufficient_quota", "quota_exceeded", "billing_hard_limit_reached"})
CONTEXT_WORDS = (
    "context_length",
    "context length",
    "maximum context",
    "too many tokens",
    "context window",
    "prompt is too long",
    # llama.cpp's server
    "exceed_context_size",
    "exceeds the available context size",
    # llama-cpp-python's
    "requested tokens",
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def reset_delay_ms(headers: Mapping[str, str], now: datetime) -> int | None:
    """When the provider says its limit reopens: ``Retry-After`` (seconds or an HTTP date) or
    ``x-ratelimit-reset-*`` (``"6m0s"``, ``"20ms"``, or seconds); the latest one wins."""
    delays = []
    retry_after = headers.get("retry-after")
    if retry_after:
        delays.append(_retry_after_ms(retry_after, now))
    for name, value in headers.items():
        if name.lower().startswith("x-ratelimit-reset"):
            delays.append(_reset_ms(value))
    known = [delay for delay in delays if delay is not None and delay >= 0]
    return max(known) if known else None


def _is_number(text: str) -> bool:
    return text.strip().replace(".", "", 1).isdigit()


def _retry_after_ms(value: str, now: datetime) -> int | None:
    if _is_number(value):
        return round(float(value) * 1000)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):  # neither seconds nor a date: no advice
        return None
    if moment.tzinfo is None:  # "-0000": a date in UTC whose source zone is unknown
        moment = moment.replace(tzinfo=UTC)
    return round((moment - now).total_seconds() * 1000)


def _reset_ms(value: str) -> int | None:
    if _is_number(value):
        return round(float(value) * 1000)
    parts = _DURATION_PART.findall(value)
    return round(sum(float(n) * _UNIT_MS[u] for n, u in parts)) if parts else None


def classify(status: int, body: Any, headers: Mapping[str, str], now: datetime) -> ProviderError:
    """An HTTP error reply as the engine's provider codes (the table in docs/providers.md)."""
    error = _error_object(body)
    code = str(error.get("code") or error.get("type") or "")
    message = error.get("message") or ""
    text = f"{code} {error.get('type') or ''} {message} {body if not error else ''}".lower()
    detail = f"HTTP {status}: {message or code or _plain(body) or 'no detail'}"
    provider_code = _provider_code(status, code, text)
    if provider_code not in ("provider-quota", "provider-unavailable"):
        return ProviderError(provider_code, False, detail=detail)
    delay = reset_delay_ms(headers, now)
    reset_at = round(now.timestamp() * 1000) + delay if delay is not None else None
    # An exhausted quota is worth retrying only when the provider says when it refills.
    retryable = provider_code == "provider-unavailable" or reset_at is not None
    return ProviderError(provider_code, retryable, reset_at, detail)


def _error_object(body: Any) -> Mapping[str, Any]:
    """The error a body holds: OpenAI's ``{"error": {...}}``, or a FastAPI-style
    ``{"detail": ...}`` (llama-cpp-python, vLLM) read as its message."""
    if not isinstance(body, Mapping):
        return {}
    error = body.get("error")
    if isinstance(error, Mapping):
        return error
    if isinstance(error, str):
        return {"message": error}
    if isinstance(body.get("message"), str):  # vLLM before 0.10: {"object": "error", ...}
        return body
    detail = body.get("detail")
    if isinstance(detail, str):
        return {"message": detail}
    if isinstance(detail, list) and detail:
        first = detail[0]
        return {"message": str(first.get("msg") if isinstance(first, Mapping) else first)}
    return {}


def _plain(body: Any) -> str:
    return body.strip()[:200] if isinstance(body, str) else ""


def _provider_code(status: int, code: str, text: str) -> str:
    if status in (401, 403):
        return "provider-auth"
    if status == 429 or (status == 402 and "quota" in text):
        quota = code in QUOTA_CODES or "quota" in text or status == 402
        return "provider-quota" if quota else "provider-unavailable"
    # Before the status: some servers report an overflow as a 500 (a retry cannot help).
    if any(word in text for word in CONTEXT_WORDS):
        return "provider-context"
    if status >= 500:
        return "provider-unavailable"
    return "provider-invalid"


def stream_error_status(error: Any) -> int:
    """The status an error event inside a 200 stream stands for: its own numeric ``code``
    (llama.cpp's), else what its ``type`` says (OpenAI's), else a server error."""
    if not isinstance(error, Mapping):
        return 500
    code = error.get("code")
    if isinstance(code, int) and 400 <= code < 600:
        return code
    kind = str(error.get("type") or "")
    statuses = {
        "authentication_error": 401,
        "permission_error": 403,
        "rate_limit_error": 429,
        "insufficient_quota": 429,
        "invalid_request_error": 400,
        "not_found_error": 404,
    }
    return statuses.get(kind, 400 if "context" in kind else 500)


def response_error(response: httpx.Response, now: datetime) -> ProviderError:
    """An error reply read in full, then classified."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text[:500]
    return classify(response.status_code, body, response.headers, now)


class StreamBroke(Exception):
    """A stream's connection failed after some of its events arrived: not a stale pooled
    connection, and not to be sent again (what arrived was already shown)."""


def send(call: Callable[[], T], *, streaming: bool = False) -> T:
    """``call()``, with a broken or timed-out connection as a retryable provider error. A
    pooled connection the server closed as it was reused (no answer at all, or a reset) is
    tried once more on a new one: servers close a connection after a stream they could not
    finish (llama-cpp-python after an empty one), and the client may not have noticed yet.
    A stream that breaks after its first event is not tried again (``StreamBroke``)."""
    try:
        try:
            return call()
        except (httpx.RemoteProtocolError, httpx.ReadError):
            return call()
    except StreamBroke as broke:
        raise ProviderError("provider-unavailable", True, detail=f"stream broke: {broke}") from None
    except httpx.TimeoutException as error:
        how = "while streaming" if streaming else f"({type(error).__name__})"
        raise ProviderError("provider-unavailable", True, detail=f"timed out {how}") from None
    except httpx.ConnectError as error:
        raise ProviderError(
            "provider-unavailable", True, detail=f"could not connect: {error}"
        ) from None
    except httpx.HTTPError as error:
        what = "stream broke" if streaming else type(error).__name__
        raise ProviderError("provider-unavailable", True, detail=f"{what}: {error}") from None
