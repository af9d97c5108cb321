"""The example project as operators run it (daphne servers, a wake worker) on a PostgreSQL
cluster and a Redis server of the tests' own, which the tests stop, restart and cut off. The
shared services on 5432 and 6379 are never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.services import REQUIRE_SERVICES

from .private_services import PG_BIN, REDIS_SERVER, PrivatePostgres, PrivateRedis, make_base_dir
from .private_services import pick_free_port as free_port

ROOT = Path(__file__).resolve().parents[2]


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "fault tests run their own PostgreSQL as the postgres user: they need root"
    if not (PG_BIN / "initdb").exists() or not Path(REDIS_SERVER).exists():
        return f"fault tests need PostgreSQL's binaries ({PG_BIN}) and redis-server"
    return None


@pytest.fixture(scope="module")
def postgres() -> Iterator[PrivatePostgres]:
    missing = _missing()
    if missing:
        if REQUIRE_SERVICES:
            pytest.fail(missing)
        pytest.skip(missing)
    server = PrivatePostgres(make_base_dir("warlock-faults-pg-"))
    server.start()
    server.create_database("app")
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=project_env(server.url("app")),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert migrated.returncode == 0, migrated.stderr
    yield server
    server.destroy()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[PrivateRedis]:
    missing = _missing()
    if missing:
        pytest.skip(missing)
    server = PrivateRedis(make_base_dir("warlock-faults-redis-"))
    server.start()
    yield server
    server.destroy()


def project_env(database_url: str, redis_url: str | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "REDIS_URL", "DATABASE_URL")
    }
    env.update(DJANGO_SETTINGS_MODULE="example_project.settings", DATABASE_URL=database_url)
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


class Process:
    """A process of the example project, its output kept in a file the test can read."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.popen = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        if self.alive:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode


class Deployment:
    """Servers and workers of the example project on the private services."""

    def __init__(self, postgres: PrivatePostgres, logs: Path) -> None:
        self.postgres = postgres
        self.logs = logs
        self.processes: list[Process] = []
        self.redis_url: str | None = None
        self.settings: dict[str, str] = {}  # more of the environment (DEBUG=0, STATIC_ROOT)

    def env(self) -> dict[str, str]:
        return {**project_env(self.postgres.url("app"), self.redis_url), **self.settings}

    def server(self, command: list[str] | None = None) -> tuple[Process, str]:
        """A server of the example project on a free port: daphne, or ``command`` (a server's
        arguments, ``{port}`` where its port goes)."""
        port = free_port()
        command = command or ["daphne", "-v", "2", "-b", "127.0.0.1", "-p", "{port}"]
        if command[-1] != "example_project.asgi:application" and command[0] == "daphne":
            command = [*command, "example_project.asgi:application"]
        arguments = [part.format(port=port) for part in command]
        process = self._start([sys.executable, "-m", *arguments], f"{command[0]}-{port}")
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    return process, base
            except httpx.HTTPError:
                pass
            assert process.alive, process.output()
            time.sleep(0.2)
        raise AssertionError(f"{command[0]} did not start:\n{process.output()}")

    def worker(self, *args: str) -> Process:
        return self._start(
            [sys.executable, "manage.py", "warlock_worker", "-v", "2", *args], "worker"
        )

    def _start(self, command: list[str], name: str) -> Process:
        process = Process(command, self.env(), self.logs / f"{name}-{len(self.processes)}.log")
        self.processes.append(process)
        return process

    def sql(self, statement: str, params: Any = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.postgres.url("app"), autocommit=True) as connection:
            cursor = connection.execute(statement, params)
            return cursor.fetchall() if cursor.description else []

    def close(self) -> None:
        for process in self.processes:
            process.stop(signal.SIGKILL)


@pytest.fixture
def deployment(postgres: PrivatePostgres, tmp_path: Path) -> Iterator[Deployment]:
    if not postgres.is_running():
        postgres.start()
    running = Deployment(postgres, tmp_path)
    yield running
    running.close()
    if not postgres.is_running():
        postgres.start()


def wait_for(condition: Any, timeout: float, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


__all__ = ["Deployment", "Process", "free_port", "wait_for"]
