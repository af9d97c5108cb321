"""warlock_cache_eval: the curve, the threshold it recommends, and the false-hit interval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from warlock_sessions.cache.evaluation import (
    SHIPPED_PAIRS,
    Point,
    ScoredPair,
    best_threshold,
    curve,
    read_pairs,
    wilson,
)


def test_the_curve_counts_refused_pairs_as_misses_at_every_threshold() -> None:
    scored = [
        ScoredPair(True, 0.95, None),
        ScoredPair(True, 0.80, None),
        ScoredPair(False, 0.90, None),
        ScoredPair(False, 0.99, "mismatch-numbers"),
    ]
    high, low = curve(scored, [0.92, 0.75])
    assert (high.precision, high.recall, high.false_hits) == (1.0, 0.5, 0)
    assert (low.precision, low.recall, low.false_hits) == (2 / 3, 1.0, 1)
    assert best_threshold([high, low], 0.99) == high
    assert best_threshold([Point(0.9, 0.5, 0.0, 1, 2)], 0.99) is None


def test_the_wilson_interval() -> None:
    assert wilson(0, 35) == pytest.approx((0.0, 0.0989), abs=1e-3)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-3)


def test_the_command_on_the_shipped_set_holds_precision_in_each_mode(capsys: Any) -> None:
    shipped = list(read_pairs(SHIPPED_PAIRS))
    call_command("warlock_cache_eval")
    out = capsys.readouterr().out
    assert out.startswith(f"{len(shipped)} pairs ({sum(p['same'] for p in shipped)} same")
    summaries = [line for line in out.splitlines() if line.startswith("threshold 0")]
    assert len(summaries) == 2, out
    rewordings = summaries[0]
    assert "precision 0.995 (0.98" in rewordings and "(95 % intervals)" in rewordings, out
    assert "reorder 27" in out  # most of the 283 reorderings served


def test_the_command_reads_a_file_of_its_own_and_refuses_a_bad_one(
    tmp_path: Path, capsys: Any
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    lines = [
        {
            "question": "Where is the city museum entrance?",
            "candidate": "where is the city museum entrance",
            "same": True,
        },
        {
            "question": "What time does the pool open?",
            "candidate": "Where do I park the car?",
            "same": False,
        },
    ]
    pairs.write_text("\n".join(json.dumps(line) for line in lines))
    call_command("warlock_cache_eval", str(pairs), "--precision", "0.9")
    out = capsys.readouterr().out
    assert "threshold 0.99: precision 1.000 (0.207-1.000), recall 1.000 (0.207-1.000)" in out
    call_command("warlock_cache_eval", str(pairs), "--mode", "rewordings", "--threshold", "0.5")
    only = capsys.readouterr().out
    assert "mode paraphrases" not in only and "threshold 0.50: precision 1.000" in only
    with pytest.raises(CommandError, match="--threshold"):
        call_command("warlock_cache_eval", str(pairs), "--threshold", "1.5")
    pairs.write_text('{"question": "x"}\n')
    with pytest.raises(CommandError, match="line 1: a pair is"):
        call_command("warlock_cache_eval", str(pairs))
    with pytest.raises(CommandError, match="needs --model"):
        call_command("warlock_cache_eval", str(pairs), "--base-url", "http://127.0.0.1:1/v1")
