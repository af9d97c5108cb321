"""docs/tutorial.md, run as a newcomer would: in an empty folder, each ``bash`` block's commands
in order and each file block written where its first line says (``# chat/bots.py``, ``<!--
chat/templates/chat/page.html -->``, or ``# append to mysite/settings.py``). The package is
already installed, so ``pip install`` lines are skipped; the last command runs the tests the
tutorial writes (the agent, the page and its socket through ``mysite/asgi.py``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
FILE = re.compile(r"^(?:# |<!-- )(append to )?([\w/.]+\.\w+)(?: -->)?$")


def steps() -> list[tuple[str, str]]:
    return [(kind, body) for kind, body in BLOCK.findall(TUTORIAL.read_text())]


def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(tmp_path),
    }
    ran = written = 0
    for kind, body in steps():
        if kind == "bash":
            for command in body.splitlines():
                if not command.strip() or command.startswith("pip install"):
                    continue
                done = subprocess.run(
                    command,
                    shell=True,
                    cwd=tmp_path,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
                ran += 1
            continue
        first, _, rest = body.partition("\n")
        target = FILE.match(first.strip())
        if target is None:
            continue  # an example, not a file of the project
        path = tmp_path / target[2]
        path.parent.mkdir(parents=True, exist_ok=True)
        if target[1]:
            path.write_text(path.read_text() + "\n" + rest)
        else:
            path.write_text(body)
        written += 1
    assert ran >= 6 and written >= 6
    assert "Ran 2 tests" in done.stderr and "OK" in done.stderr, done.stderr


@pytest.mark.parametrize("kind", ["bash", "python", "html"])
def test_every_block_of_the_tutorial_is_run_or_written(kind: str) -> None:
    blocks = [body for found, body in steps() if found == kind]
    assert blocks
    if kind != "bash":
        assert all(FILE.match(body.partition("\n")[0].strip()) for body in blocks)


def test_the_api_page_mounts_the_sockets_with_the_tutorial_s_tested_asgi_py() -> None:
    """docs/api.md's ``asgi.py`` is the tutorial's, which the test above runs (one written
    with its imports at the top failed with AppRegistryNotReady and lacked the guard)."""
    api = (TUTORIAL.parent / "api.md").read_text()
    tutorial = dict((body.partition("\n")[0], body) for kind, body in steps() if kind == "python")
    shown = [body for kind, body in BLOCK.findall(api) if body.startswith("# mysite/asgi.py")]
    assert shown == [tutorial["# mysite/asgi.py"]]
