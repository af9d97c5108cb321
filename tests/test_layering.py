"""The engine is pure Python: it imports, and works, in a process without Django settings.
(Which layer may import which is checked by import-linter in ``make lint``.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import warlock_sessions

PACKAGE = Path(warlock_sessions.__file__).parent


def test_the_engine_and_standalone_stores_work_without_django_configured(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = (
        "import warlock_sessions.engine as engine\n"
        "from warlock_sessions.stores import SqliteStore, FileStore, MemoryStore\n"
        f"store = SqliteStore({str(tmp_path / 'db.sqlite3')!r})\n"
        "store.save(engine.new_session('s1'), 0)\n"
        "assert store.load('s1')['version'] == 1\n"
        "from django.conf import settings\n"
        "assert not settings.configured\n"
        "print('ok')\n"
    )
    environment = {
        key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
