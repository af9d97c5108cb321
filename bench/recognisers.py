"""Recognisers against the libraries made for each job, on the three tables of
tests/providers/: share understood, wrong values, and microseconds per call, in one run.

    dates      ours  vs dateparser (DATE_ORDER from the conversation, future dates preferred)
    counts     ours  vs text2num's alpha2digit
    options    ours  vs rapidfuzz (WRatio, cutoff 85)
    routing    ours  vs rapidfuzz (partial_ratio of each phrase, cutoff 85)
    language   ours  vs lingua (English and Portuguese, minimum relative distance 0.25)
    phones     ours  vs phonenumbers (region by the conversation)

Needs the bench extra (pip install -e '.[bench]'). A library that is missing is skipped.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tests.providers.test_understanding_table import NOW, is_right, understood
from tests.providers.utterances import BOOKING_PHRASES, CASES, SERVICES, Case
from tests.providers.utterances_second import HELDOUT
from tests.providers.utterances_third import HELDOUT2

TABLE = CASES + HELDOUT + HELDOUT2
KINDS = {
    "dates": ("date_numeric", "date_relative", "date_named"),
    "counts": ("count",),
    "options": ("option",),
    "routing": ("route",),
    "language": ("language",),
    "phones": ("phone",),
}


def dateparser_reader() -> Callable[[Case], Any]:
    import dateparser

    naive_now = NOW.replace(tzinfo=None)

    def read(case: Case) -> Any:
        order = {"pt": "DMY", "en": "MDY"}.get(case.conversation or "", "DMY")
        languages = [case.conversation] if case.conversation else ["en", "pt"]
        settings = {
            "RELATIVE_BASE": naive_now,
            "PREFER_DATES_FROM": "future",
            "DATE_ORDER": order,
            "REQUIRE_PARTS": ["day"],
        }
        found = dateparser.parse(case.text, languages=languages, settings=settings)
        return found.date().isoformat() if found else None

    return read


def text2num_reader() -> Callable[[Case], Any]:
    from text_to_num import alpha2digit

    def read(case: Case) -> Any:
        digits = re.search(r"\d+", alpha2digit(case.text, case.conversation or "en"))
        return int(digits[0]) if digits else None

    return read


def rapidfuzz_option_reader() -> Callable[[Case], Any]:
    from rapidfuzz import fuzz, process

    def read(case: Case) -> Any:
        options = SERVICES[case.conversation or "en"]["enum"]
        best = process.extractOne(case.text.lower(), options, scorer=fuzz.WRatio, score_cutoff=85)
        return best[0] if best else None

    return read


def rapidfuzz_route_reader() -> Callable[[Case], Any]:
    from rapidfuzz import fuzz

    def read(case: Case) -> Any:
        text = case.text.lower()
        if any(fuzz.partial_ratio(p[1:], text) >= 95 for p in BOOKING_PHRASES if p[0] == "!"):
            return None
        wanted = [phrase for phrase in BOOKING_PHRASES if not phrase.startswith("!")]
        hit = any(fuzz.partial_ratio(phrase, text) >= 85 for phrase in wanted)
        return "booking" if hit else None

    return read


def lingua_reader() -> Callable[[Case], Any]:
    from lingua import Language, LanguageDetectorBuilder

    detector = (
        LanguageDetectorBuilder.from_languages(Language.ENGLISH, Language.PORTUGUESE)
        .with_minimum_relative_distance(0.25)
        .build()
    )
    codes = {Language.ENGLISH: "en", Language.PORTUGUESE: "pt"}

    def read(case: Case) -> Any:
        found = detector.detect_language_of(case.text)
        return codes.get(found) if found else None

    return read


def phonenumbers_reader() -> Callable[[Case], Any]:
    import phonenumbers

    def read(case: Case) -> Any:
        region = {"pt": "BR", "en": "US"}.get(case.conversation or "", "US")
        for match in phonenumbers.PhoneNumberMatcher(case.text, region):
            number = match.number
            written_plus = case.text.lstrip().find("+") != -1
            national = str(number.national_number)
            return f"+{number.country_code}{national}" if written_plus else national
        return None

    return read


LIBRARIES: dict[str, tuple[str, Callable[[], Callable[[Case], Any]]]] = {
    "dates": ("dateparser", dateparser_reader),
    "counts": ("text2num", text2num_reader),
    "options": ("rapidfuzz", rapidfuzz_option_reader),
    "routing": ("rapidfuzz", rapidfuzz_route_reader),
    "language": ("lingua", lingua_reader),
    "phones": ("phonenumbers", phonenumbers_reader),
}


def score(read: Callable[[Case], Any], cases: list[Case]) -> tuple[float, int, float]:
    """Share right, wrong values, and microseconds per call (the best of three passes)."""
    results = [read(case) for case in cases]
    right = sum(is_right(case, got) for case, got in zip(cases, results, strict=True))
    wrong = sum(
        got is not None and not is_right(case, got)
        for case, got in zip(cases, results, strict=True)
    )
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for case in cases:
            read(case)
        best = min(best, (time.perf_counter() - started) / len(cases))
    return right / len(cases), wrong, best * 1e6


def main() -> None:
    print(f"{'kind':10} {'cases':>5}  {'who':14} {'understood':>10} {'wrong':>5} {'µs/call':>9}")
    for kind, kinds in KINDS.items():
        cases = [case for case in TABLE if case.kind in kinds]
        rows = [("ours", understood)]
        name, make = LIBRARIES[kind]
        try:
            rows.append((name, make()))
        except ImportError:
            print(f"{kind:10} {name} is not installed: pip install -e '.[bench]'")
        for who, read in rows:
            share, wrong, micros = score(read, cases)
            print(f"{kind:10} {len(cases):5}  {who:14} {share:10.1%} {wrong:5} {micros:9.1f}")


if __name__ == "__main__":
    started = datetime.now(UTC)
    main()
    print(f"(ran {datetime.now(UTC) - started})")
