"""The limits ``make lint`` holds the package to that ruff does not measure: no function above
a cyclomatic complexity of 15 as radon counts it (ruff's mccabe does not count ``and`` and
``or``; radon does), and no module over 700 lines (one that grows past it owns too much)."""

from __future__ import annotations

import sys
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

MAX_COMPLEXITY = 15
MAX_LINES = 700


def over_the_limit(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        text = path.read_text()
        lines = text.count("\n")
        if lines > MAX_LINES:
            found.append(f"{path}: {lines} lines (over {MAX_LINES})")
        for block in cc_visit(text):
            # A class's figure is its methods' together: each method is held to the limit.
            if isinstance(block, Function) and block.complexity > MAX_COMPLEXITY:
                found.append(
                    f"{path}:{block.lineno}: {block.fullname} has radon's complexity "
                    f"{block.complexity} (over {MAX_COMPLEXITY})"
                )
    return found


if __name__ == "__main__":
    problems = over_the_limit(Path(sys.argv[1] if len(sys.argv) > 1 else "warlock_sessions"))
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)
