"""tools/limits.py, which make lint runs: it finds a function over radon's complexity of 15
(counting ``and``/``or``, which ruff's mccabe does not) and a module over 700 lines, and the
package has neither."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("limits", ROOT / "tools" / "limits.py")
assert spec is not None and spec.loader is not None
limits = importlib.util.module_from_spec(spec)
spec.loader.exec_module(limits)


def test_a_function_over_the_complexity_and_a_module_over_the_length_are_found(
    tmp_path: Path,
) -> None:
    conditions = " or ".join(f"x == {n}" for n in range(16))  # mccabe counts this as one
    (tmp_path / "busy.py").write_text(f"def busy(x):\n    if {conditions}:\n        return 1\n")
    (tmp_path / "long.py").write_text("x = 1\n" * 701)
    (tmp_path / "fine.py").write_text("def fine(x):\n    return x\n" + "y = 2\n" * 600)
    found = limits.over_the_limit(tmp_path)
    assert len(found) == 2
    assert "busy.py:1: busy has radon's complexity 17" in found[0]
    assert "long.py: 701 lines" in found[1]


def test_the_package_is_within_its_limits() -> None:
    assert limits.over_the_limit(ROOT / "warlock_sessions") == []
