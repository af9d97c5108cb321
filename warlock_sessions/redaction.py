"""Redaction: personal data taken out of text before anything is kept.

``WARLOCK_SESSIONS["REDACT"]`` names what is taken out: a list of built-in recognisers
(:data:`RECOGNISERS`: ``"email"``, ``"phone"``, ``"card"``, ``"iban"`` and national ids
``"us_ssn"``, ``"br_cpf"``, ``"uk_nino"``), import strings of functions ``str -> str``, or
one such function. The stores call :func:`redact` (text) and :func:`redact_value` (a JSON
value: its strings, not its structural keys) on what they are about to write; the turn that
received the text has already run on the original. :class:`RedactingFilter` does the same
for log records.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .conf import REDACT_RECOGNISERS, BuiltFromSettings, warlock_settings
from .errors import ConfigurationError

Redactor = Callable[[str], str]


def luhn_valid(digits: str) -> bool:
    """Whether a card number's digits pass the Luhn check (ISO/IEC 7812)."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _iban_valid(text: str) -> bool:
    compact = text.replace(" ", "").upper()
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def _cpf_valid(text: str) -> bool:
    digits = [int(char) for char in text if char.isdigit()]
    if len(set(digits)) == 1:
        return False
    for length in (9, 10):
        total = sum(d * w for d, w in zip(digits[:length], range(length + 1, 1, -1), strict=True))
        if (total * 10 % 11) % 10 != digits[length]:
            return False
    return True


def _ssn_valid(text: str) -> bool:
    area, group, serial = text.split("-")
    return area not in {"000", "666"} and area[0] != "9" and group != "00" and serial != "0000"


#: What a run of digits that is not a phone number starts as: a date, an IP address.
_NOT_A_PHONE = re.compile(
    r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}|\d{1,3}(?:\.\d{1,3}){3}$"
)


def _phone_valid(text: str) -> bool:
    """An international number has 7 to 15 digits (E.164); one without its country code
    at least 9, so a date or an amount is not taken for one."""
    digits = sum(char.isdigit() for char in text)
    if _NOT_A_PHONE.match(text):
        return False
    return (7 if text.startswith("+") else 9) <= digits <= 15


@dataclass(frozen=True)
class Recogniser:
    """One kind of personal data: where it may be (``pattern``), what makes a match real
    (``valid``: a check digit, a digit count) and what replaces it (``[<name>]``)."""

    name: str
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] = lambda text: True

    def __call__(self, text: str) -> str:
        # Matched on a copy with odd spaces and dashes made plain (the same length), so
        # "4539\u202f1488…" is a card too; replaced in the text itself.
        shadow = self.shadow(text)
        kept, last = [], 0
        for match in self.pattern.finditer(shadow):
            for start, end in self.spans(match):
                kept += [text[last:start], f"[{self.name}]"]
                last = end
        return "".join([*kept, text[last:]]) if kept else text

    def spans(self, match: re.Match[str]) -> list[tuple[int, int]]:
        """Where in ``match`` the data is: all of it, if it is real."""
        return [match.span()] if self.valid(match.group(0)) else []

    def shadow(self, text: str) -> str:
        """The copy of ``text`` the pattern reads, as long as ``text``."""
        return text.translate(_PLAIN_SEPARATORS)


class CardRecogniser(Recogniser):
    """Card numbers by their digits, whatever touches them (a label and a colon, letters, an
    expiry, a quantity): within a run of digit groups, the consecutive groups that together
    hold 13 to 19 digits and pass the Luhn check, the longest from each group on. A card
    written in groups is written one way: every group of at most six digits, all joined by
    the same separators ("4111 1111 …", "4 1 1 1 …" as speech is typed, "4111\\n1111…");
    so two phone numbers or dates on two lines, a date range ("2026-12-04 - 2026-12-05"), a
    file name's date and time, or an order number's long parts are no card. Groups of one or
    two digits joined by a slash or a dot are a date's or a version's, never a card's; a
    number that is a URL's path segment is an id. The escapes a repr or JSON writes between
    groups ("\\t", "\\xa0", "\\u202f") separate them too. The work is the text's length:
    from each group, the seven windows of 13 to 19 digits, each checked in constant time."""

    def shadow(self, text: str) -> str:
        plain = super().shadow(text)
        return _ESCAPE.sub(lambda escape: " " * len(escape.group(0)), plain)

    def spans(self, match: re.Match[str]) -> list[tuple[int, int]]:
        if match.end() - match.start() < 13:
            return []  # too short to hold a card: most runs of digits, at once
        text = match.string
        groups = [group.span() for group in _DIGITS.finditer(text, match.start(), match.end())]
        return _cards_among(text, groups)


#: The most digits one group of a card written in groups has (4-6-5 for American Express).
MAX_CARD_GROUP = 6

_DIGITS = re.compile(r"\d+")


def _chains(text: str, groups: list[tuple[int, int]]) -> list[int]:
    """For each group, the first group a card written in groups could start at and end at
    it: groups of at most ``MAX_CARD_GROUP`` digits, joined by the same separators, no date's
    slash or dot between short groups."""
    starts: list[int] = []
    for index, (start, end) in enumerate(groups):
        if index == 0:
            starts.append(0)
            continue
        before = groups[index - 1]
        joinable = max(end - start, before[1] - before[0]) <= MAX_CARD_GROUP and not _date_like(
            text, before, (start, end)
        )
        if not joinable:
            starts.append(index)
            continue
        previous = starts[index - 1]
        same = previous < index - 1 and _joint(text, groups, index - 1) == _joint(
            text, groups, index
        )
        starts.append(previous if same else index - 1)
    return starts


def _joint(text: str, groups: list[tuple[int, int]], index: int) -> frozenset[str]:
    """What joins group ``index`` to the one before it, as the set of its characters."""
    return frozenset(text[groups[index - 1][1] : groups[index][0]])


def _url_path(text: str, start: int) -> bool:
    """Whether the digits at ``start`` are a URL's path segment (``…/status/6609…``)."""
    if start == 0 or text[start - 1] != "/":
        return False
    token = text[:start].rsplit(None, 1)[-1]
    return "://" in token


def _cards_among(text: str, groups: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans of consecutive ``groups`` that hold a card (see ``CardRecogniser``), the
    longest from each group on, none overlapping. A window's Luhn sum is the difference of
    two running sums."""
    digits = [int(char) for start, end in groups for char in text[start:end]]
    starts, ends, count = [], [], 0
    for start, end in groups:
        starts.append(count)
        count += end - start
        ends.append(count)
    sums = _luhn_sums(digits)
    chains = _chains(text, groups)
    found, first = [], 0
    while first < len(groups):
        begin = starts[first]
        lowest = bisect.bisect_left(ends, begin + 13, first)
        highest = bisect.bisect_right(ends, begin + 19, first)
        for last in range(highest - 1, lowest - 1, -1):
            one_card = last == first or chains[last] <= first
            if not one_card or (last == first and _url_path(text, groups[first][0])):
                continue  # not one card's groups, or a URL's path
            stop = ends[last]
            # The last digit is never doubled: the window's parity is that of stop - 1.
            running = sums[(stop - 1) % 2]
            if (running[stop] - running[begin]) % 10 == 0:
                found.append((groups[first][0], groups[last][1]))
                first = last
                break
        first += 1
    return found


def _luhn_sums(digits: list[int]) -> tuple[list[int], list[int]]:
    """The Luhn sums of the first k digits, were the digit at an even index taken as it is
    (and at an odd one doubled), or the other way round."""
    as_is, doubled = [0], [0]
    for index, digit in enumerate(digits):
        twice = digit * 2 - 9 if digit > 4 else digit * 2
        even = index % 2 == 0
        as_is.append(as_is[-1] + (digit if even else twice))
        doubled.append(doubled[-1] + (twice if even else digit))
    return as_is, doubled


def _date_like(text: str, before: tuple[int, int], after: tuple[int, int]) -> bool:
    """Whether two digit groups are joined as a date's or a version's are: by a slash or a
    dot, one of them of fewer than three digits."""
    joined = text[before[1] : after[0]]
    short = min(before[1] - before[0], after[1] - after[0]) < 3
    return short and ("/" in joined or "." in joined)


#: The escapes a repr or JSON writes for a separator: masked as spaces before a card is looked
#: for (their letters and digits are no card's).
_ESCAPE = re.compile(r"\\(?:[tnr]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})")

#: Spaces and dashes of other kinds, as the plain ones (one character for one).
_PLAIN_SEPARATORS = str.maketrans(
    {
        **{char: " " for char in "\u00a0\u202f\u205f\u3000\u200b\u200c\u200d\u2060\ufeff"},
        **{chr(code): " " for code in range(0x2002, 0x200B)},
        **{char: "-" for char in "\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d"},
        "\uff20": "@",
    }
)

# Numbers are never cut out of a longer run of letters, digits or separators: an id, a hash,
# a time or a timestamp is not a phone number that happens to sit inside it. An escaped line
# break (JSON's "\n") before a number is a break, not a letter.
_NOT_AFTER = r"(?:(?<=\\[nrt])|(?<![\w+.\-/@#:])|(?<=[^\W\d_]:))"
_NOT_BEFORE = r"(?![\w@]|[.\-/:]\w)"

#: What a text must hold for any built-in recogniser to find something in it: a digit (of any
#: script) or an at sign (the full-width one too).
_MAY_HOLD_DATA = re.compile("[\\d@\uff20]")

#: The built-in recognisers (``conf.REDACT_RECOGNISERS`` names them in the order they run:
#: the specific before the general).
RECOGNISERS: dict[str, Recogniser] = {
    recogniser.name: recogniser
    for recogniser in (
        CardRecogniser(
            "card",
            # A run of digit groups, whatever is around it, that may hold a card among
            # others; separated by up to eight spaces, tabs, line breaks, dashes, dots,
            # underscores or slashes (zero-width and other odd ones made plain first, and
            # escapes masked: a traceback's "cannot work out '4111\\t1111…'").
            re.compile(r"\d+(?:[ \t\r\n._/-]{1,8}\d+)*"),
        ),
        Recogniser(
            "email",
            re.compile(r"(?<![\w.+%-])[\w.+%-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+"),
        ),
        Recogniser(
            "iban",
            re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![\w])"),
            _iban_valid,
        ),
        Recogniser(
            "us_ssn", re.compile(_NOT_AFTER + r"\d{3}-\d{2}-\d{4}" + _NOT_BEFORE), _ssn_valid
        ),
        Recogniser(
            "br_cpf",
            re.compile(_NOT_AFTER + r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}" + _NOT_BEFORE),
            _cpf_valid,
        ),
        Recogniser(
            "uk_nino",
            re.compile(
                r"(?<![\w])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                r" ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![\w])"
            ),
        ),
        Recogniser(
            "phone",
            # Digits written as a number is dialled (groups, brackets, a leading +).
            re.compile(
                _NOT_AFTER
                + r"(?:\+\d(?:[ .\-]?\(?\d\)?){6,14}|\(?\d{2,4}\)?(?:[ .\-]?\d){7,13})"
                + _NOT_BEFORE
            ),
            _phone_valid,
        ),
    )
}

#: Keys whose values are a document's structure (ids, kinds, moments), never redacted.
STRUCTURAL_KEYS = frozenset(
    {
        "id", "runId", "key", "type", "kind", "role", "status", "flowId", "stepId", "version",
        "seq", "at", "createdAt", "updatedAt", "startedAt", "storedAt", "expiresAt",
        "toolCallId", "tool_call_id", "namespace", "scope", "anchor", "dedupeKey",
        "sessionId", "session_id", "conversationId",
    }
)  # fmt: skip


def _redactor_of(steps: list[Any] | None) -> Redactor | None:
    """The one function ``REDACT``'s validated steps amount to: the built-in recognisers in
    their own order, then the project's functions in the order given."""
    if not steps:
        return None
    built_in = [RECOGNISERS[name] for name in REDACT_RECOGNISERS if name in steps]
    own = [step for step in steps if not isinstance(step, str)]

    def redact_all(text: str) -> str:
        # Every built-in recogniser needs a digit or an "@": most stored texts (codes, flow
        # names, moments without them, words) are passed over at once.
        chain = [*built_in, *own] if _MAY_HOLD_DATA.search(text) else own
        for step in chain:
            text = step(text)
            if not isinstance(text, str):
                raise TypeError(f"REDACT's {step!r} returned {type(text).__name__}, not text")
        return text

    return redact_all


#: The configured redaction; ``None`` when ``REDACT`` is not set (or Django is not: a store
#: used on its own redacts nothing).
redactor = BuiltFromSettings(lambda: _redactor_of(warlock_settings.REDACT))


def _fingerprint_of(steps: list[Any] | None) -> str:
    names = [
        step if isinstance(step, str) else f"{step.__module__}.{step.__qualname__}"
        for step in steps or ()
    ]
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


#: What ``REDACT`` names, as a short digest: a session keeps the one its stored text was
#: redacted with, so text kept before redaction (or before a recogniser was added) is
#: redacted again at its next turn.
redaction_fingerprint = BuiltFromSettings(lambda: _fingerprint_of(warlock_settings.REDACT))


def redact(text: str) -> str:
    """``text`` with what ``REDACT`` recognises replaced (``text`` itself when it is not set).
    A function given in the setting that fails is not skipped: its error stops the write."""
    step = redactor()
    return text if step is None or not text else step(text)


def redact_value(value: Any, *, skip: Iterable[str] = STRUCTURAL_KEYS) -> Any:
    """A copy of a JSON value with its strings, keys and card-like numbers redacted, but the
    values of ``skip`` keys in its records (the first objects met, as a log entry or a
    message is): deeper down, a tool's ``key`` argument is what someone said. ``value``
    itself when ``REDACT`` is not set."""
    if redactor() is None:
        return value
    skipped = frozenset(skip)

    def walk(item: Any, record: bool) -> Any:
        if isinstance(item, str):
            return redact(item)
        if isinstance(item, Mapping):
            return {
                (redact(key) if isinstance(key, str) else key): (
                    entry if record and key in skipped else walk(entry, False)
                )
                for key, entry in item.items()
            }
        if isinstance(item, list | tuple):
            return [walk(entry, record) for entry in item]
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 10**12:
            said = redact(str(item))
            return item if said == str(item) else said
        return item

    return walk(value, True)


def is_personal(text: str) -> bool:
    """Whether ``REDACT`` would change ``text``."""
    return redactor() is not None and redact(text) != text


class RedactingFilter(logging.Filter):
    """Redacts a log record's message and its traceback before a handler writes them.

    Put it on the handlers in ``LOGGING`` (``"filters": {"redact": {"()":
    "warlock_sessions.redaction.RedactingFilter"}}``); with ``REDACT`` set, the app also puts
    it on every handler configured when it starts (:func:`install_log_redaction`).

    A record keeps the shape of its arguments (a tuple stays a tuple of as many, a mapping a
    mapping): formatters read them (uvicorn's access log unpacks five, gunicorn's names
    them), so each argument is redacted in place, and only a message whose personal data
    spans its format and arguments is replaced whole."""

    def filter(self, record: logging.LogRecord) -> bool:
        if redactor() is None:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a call with the wrong arguments: logging itself reports it
            return True
        try:
            if redact(message) != message:
                record.msg, record.args = _redacted_parts(record, message)
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text)
            if record.stack_info:
                record.stack_info = redact(record.stack_info)
        except Exception as error:  # a REDACT function that fails: nothing of the text goes
            record.msg = f"[a log record withheld: REDACT failed with {type(error).__name__}]"
            record.args, record.exc_info, record.exc_text, record.stack_info = (
                (),
                None,
                None,
                None,
            )
        return True


def _redacted_parts(record: logging.LogRecord, message: str) -> tuple[Any, Any]:
    """The record's format and arguments redacted one by one, or, where that leaves personal
    data (it spanned the two) or no longer formats, the whole message and no arguments."""
    args: Any = record.args
    if isinstance(args, Mapping):
        args = {name: _redacted_argument(value) for name, value in args.items()}
    elif isinstance(args, tuple):
        args = tuple(_redacted_argument(value) for value in args)
    msg = redact(record.msg) if isinstance(record.msg, str) else record.msg
    try:
        again = str(msg) % args if args else str(msg)
        if redact(again) == again:
            return msg, args
    except (TypeError, ValueError, KeyError):
        pass
    return redact(message), ()


def _redacted_argument(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bool) or value is None:
        return value
    said = str(value)
    kept = redact(said)
    return value if kept == said else kept


def install_log_redaction() -> None:
    """With ``REDACT`` set, put a :class:`RedactingFilter` on every handler of every logger
    configured now (once each)."""
    try:
        if warlock_settings.REDACT is None:
            return
    except ConfigurationError:
        return  # the system check reports it; the app still starts

    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    handlers = {
        id(handler): handler
        for logger in loggers
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
    }
    # The last resort writes what no handler took (Django's default logging, a project's
    # LOGGING without a root handler) to stderr.
    if logging.lastResort is not None:
        handlers[id(logging.lastResort)] = logging.lastResort
    for handler in handlers.values():
        if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
            handler.addFilter(RedactingFilter())
