"""A user turn's content with its attachments resolved: a file part read once, when the turn
is made, into ``{type, name, mediaType, data (base64)}``. The stored history then holds the
bytes that were sent, so the next request sends the same ones even if the file changed."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Any

from ..errors import AttachmentError

ATTACHMENT_TYPES = ("image", "file")


def resolve_content(content: Any, max_bytes: int) -> Any:
    """``content`` as stored: text as it is, or a list of parts (``{"type": "text", "text"}``,
    ``{"type": "image"|"file", "path"}`` or already resolved with ``data``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise AttachmentError("a message is text, or a non-empty list of content parts")
    return [_resolve_part(part, max_bytes) for part in content]


def _resolve_part(part: Any, max_bytes: int) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise AttachmentError(f"a content part is an object, not {type(part).__name__}")
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind not in ATTACHMENT_TYPES:
        raise AttachmentError(f"a content part is text, image or file, not {kind!r}")
    if isinstance(part.get("data"), str):
        return dict(part)
    if not isinstance(part.get("path"), str | Path):
        raise AttachmentError(f"an {kind} part has a path or base64 data")
    return _read(kind, Path(part["path"]), part.get("mediaType"), max_bytes)


def _read(kind: str, path: Path, media_type: str | None, max_bytes: int) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)
    except OSError as error:
        raise AttachmentError(
            f"cannot read the attachment {path.name!r}: {error.strerror}"
        ) from None
    if len(data) > max_bytes:
        raise AttachmentError(f"the attachment {path.name!r} is over {max_bytes} bytes")
    return {
        "type": kind,
        "name": path.name,
        "mediaType": media_type or mimetypes.guess_type(path.name)[0] or "application/octet-stream",
        "data": base64.b64encode(data).decode("ascii"),
    }
