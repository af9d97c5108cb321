"""The documentation's Python examples run, in order, as written (each page in one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
RUNNABLE = ["workflows.md", "locks.md"]


@pytest.mark.parametrize("page", RUNNABLE)
def test_every_python_example_of_the_page_runs(page: str) -> None:
    text = (DOCS / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    namespace: dict[str, object] = {}
    for block in blocks:
        if "WARLOCK_SESSIONS = " in block:
            continue  # a settings snippet
        exec(compile(block, f"{page} example", "exec"), namespace)
    assert blocks
