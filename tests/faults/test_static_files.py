"""The admin of a deployment as docs/deployment.md makes it: DEBUG off, `collectstatic` into
STATIC_ROOT, uvicorn serving the project with WhiteNoise. Every static file the admin's pages
ask for (Django's styles, the flow graph's Mermaid and script, the live hand-over script)
answers 200; without WhiteNoise each was a 404."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx

from tests.faults.conftest import ROOT, Deployment

WARLOCK_FILES = [
    "warlock_sessions/admin-graph.js",
    "warlock_sessions/admin-handover.js",
    "warlock_sessions/vendor/mermaid-12.3.0.min.js",
    "warlock_sessions/vendor/mermaid-LICENSE.txt",
]


def test_the_admin_s_static_files_are_served_as_the_deployment_docs_say(
    deployment: Deployment, tmp_path: Path
) -> None:
    deployment.settings = {"DEBUG": "0", "STATIC_ROOT": str(tmp_path / "static")}
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=deployment.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert collected.returncode == 0, collected.stderr
    _, base = deployment.server(["uvicorn", "example_project.asgi:application", "--port", "{port}"])
    with httpx.Client(base_url=base, timeout=10) as client:
        login = client.get("/admin/login/")
        assert login.status_code == 200
        asked = re.findall(r'(?:href|src)="(/static/[^"]+)"', login.text)
        assert any(path.endswith(".css") for path in asked), asked
        for path in [*asked, *(f"/static/{name}" for name in WARLOCK_FILES)]:
            answer = client.get(path)
            assert answer.status_code == 200, (path, answer.status_code)
        graph = client.get("/static/warlock_sessions/admin-graph.js")
        assert "javascript" in graph.headers["content-type"]
