"""Throwaway PostgreSQL clusters and Redis servers for fault-injection tests.

Tests that stop, restart or kill the database/cache must never do so to the
shared services on 127.0.0.1:5432 / :6379, so each test (or xdist worker)
gets its own instance here:

    base = make_base_dir("pg-")
    pg = PrivatePostgres(base)
    pg.start()
    ...
    pg.destroy()

Everything is bounded by a timeout and fails with :class:`ServiceError`
(carrying the tail of the server log) rather than hanging.

Stdlib only, plus psycopg 3 and redis-py (imported lazily, so importing this
module costs nothing for tests that do not use it).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import random
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import weakref
from pathlib import Path

__all__ = ["PrivatePostgres", "PrivateRedis", "ServiceError", "make_base_dir"]

HOST = "127.0.0.1"
DEFAULT_TIMEOUT = 30.0  # seconds to wait for a server to become ready / go away

PG_BIN = Path(os.environ.get("PRIVATE_PG_BIN", "/usr/lib/postgresql/15/bin"))
REDIS_SERVER = os.environ.get("PRIVATE_REDIS_SERVER", "/usr/bin/redis-server")
PG_OS_USER = "postgres"  # initdb/postgres refuse to run as root

# Linux limits a unix socket path (sun_path) to 107 bytes plus NUL.
_MAX_SOCKET_PATH = 107

# pytest-randomly (and anything else calling random.seed()) gives every xdist
# worker the same seed, so the module-level PRNG would hand all workers the
# same "random" port. The OS entropy source cannot be reseeded.
_rng = random.SystemRandom()

# Instances still running at interpreter exit (a test that forgot destroy(),
# or a failing fixture). pg_ctl daemonises the postmaster and redis-server is
# not tied to our lifetime, so without this they would outlive the test run.
_live: weakref.WeakSet[_Service] = weakref.WeakSet()


class ServiceError(RuntimeError):
    """A private service failed to initialise, start or stop in time."""


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def make_base_dir(prefix: str = "private-svc-", parent: str | Path | None = None) -> Path:
    """Create a fresh directory that the postgres OS user can reach.

    pytest's ``tmp_path`` lives under /tmp/pytest-of-root/ (mode 0700), which
    the postgres user cannot traverse, so when running as root use a directory
    directly under /tmp instead. mkdtemp creates mode 0700; widen it to 0755.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent or tempfile.gettempdir()))
    path.chmod(0o755)
    return path


def _ephemeral_port_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def _can_bind(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def pick_free_port() -> int:
    """Return a currently free TCP port on 127.0.0.1.

    Deliberately *below* the kernel's ephemeral range: the port has to stay
    ours while the server is stopped (clients reconnect to the same address),
    and a port inside the ephemeral range can meanwhile be taken as the local
    end of some outgoing connection, making the restart fail with EADDRINUSE.
    There is still a window between this check and the server binding; callers
    retry with a new port if the first start loses that race.
    """
    eph_lo, _ = _ephemeral_port_range()
    lo, hi = 15000, eph_lo - 1
    if hi - lo >= 1000:
        for _ in range(200):
            port = _rng.randint(lo, hi)
            if _can_bind(port):
                return port
    # Odd kernel config: fall back to letting the kernel choose.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _port_in_use_error(log: Path) -> bool:
    text = _log_tail(log, 50)
    return "Address already in use" in text or "could not bind" in text


class _Service:
    """Shared bits: base dir, port, exit cleanup."""

    def __init__(self, base_dir: Path | str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.timeout = timeout
        # Picked now so url()/port work before start(); it only changes if the
        # very first start() loses the race for it (see pick_free_port).
        self.port = pick_free_port()
        self._started_once = False
        # destroy() deletes base_dir and PrivatePostgres chowns it, so refuse a
        # directory that already holds something (say, /tmp itself).
        if self.base_dir.exists() and any(self.base_dir.iterdir()):
            raise ServiceError(f"base dir {self.base_dir} must be empty or not exist yet")
        self.base_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        _live.add(self)

    def is_running(self) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def start(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def stop(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def restart(self) -> None:
        self.stop()
        self.start()

    def destroy(self) -> None:
        """Stop the server (if running) and delete its directory."""
        try:
            if self.is_running():
                self.stop()
        finally:
            _live.discard(self)
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()


@atexit.register
def _stop_leftovers() -> None:
    for svc in list(_live):
        try:
            if svc.is_running():
                svc.stop()
        except Exception:  # best effort at interpreter exit
            pass


# --------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------


class PrivatePostgres(_Service):
    """A private PostgreSQL cluster in ``base_dir`` (data in ``base_dir/data``).

    Listens on 127.0.0.1:<port> only, and puts its unix socket in base_dir
    rather than /var/run/postgresql, so it can never collide with the system
    cluster. Trust auth, superuser ``postgres``, fsync off.
    """

    def __init__(self, base_dir: Path | str, timeout: float = DEFAULT_TIMEOUT) -> None:
        super().__init__(base_dir, timeout)
        self.data_dir = self.base_dir / "data"
        self.log_file = self.base_dir / "postgres.log"
        # Highest possible port: 5 digits.
        sock = self.base_dir / ".s.PGSQL.65535"
        if len(str(sock)) > _MAX_SOCKET_PATH:
            raise ServiceError(
                f"base dir {self.base_dir} is too long for a unix socket path "
                f"(limit {_MAX_SOCKET_PATH} bytes); use make_base_dir()"
            )
        self._as_pg = os.geteuid() == 0
        if self._as_pg:
            self._pg_pw = pwd.getpwnam(PG_OS_USER)
            # postgres writes its log, socket and lock file into base_dir.
            os.chown(self.base_dir, self._pg_pw.pw_uid, self._pg_pw.pw_gid)
            self._check_reachable_by_pg()

    # -- privileges -------------------------------------------------------

    def _check_reachable_by_pg(self) -> None:
        """Fail early and clearly if postgres cannot reach base_dir.

        Otherwise initdb dies with a bare "Permission denied" on some path.
        (Plain mode bits only; ACLs are not considered.)
        """
        uid, gid = self._pg_pw.pw_uid, self._pg_pw.pw_gid
        groups = set(os.getgrouplist(PG_OS_USER, gid))
        for p in [self.base_dir, *self.base_dir.parents]:
            st = p.stat()
            if st.st_uid == uid:
                ok = st.st_mode & stat.S_IXUSR
            elif st.st_gid in groups:
                ok = st.st_mode & stat.S_IXGRP
            else:
                ok = st.st_mode & stat.S_IXOTH
            if not ok:
                raise ServiceError(
                    f"the {PG_OS_USER!r} OS user cannot traverse {p} "
                    f"(mode {stat.filemode(st.st_mode)}); put the cluster under a "
                    f"world-traversable dir, e.g. make_base_dir()"
                )

    def _run(self, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL binary, as the postgres OS user when we are root."""
        kwargs: dict = {}
        if self._as_pg:
            # Like `runuser -u postgres`, but without depending on runuser.
            kwargs = {
                "user": self._pg_pw.pw_uid,
                "group": self._pg_pw.pw_gid,
                "extra_groups": os.getgrouplist(PG_OS_USER, self._pg_pw.pw_gid),
            }
        env = dict(os.environ)
        if self._as_pg:
            env.update(HOME=self._pg_pw.pw_dir, USER=PG_OS_USER, LOGNAME=PG_OS_USER)
        # A stray PGDATA/PGPORT/PGHOST in the caller's env must not redirect us.
        for var in ("PGDATA", "PGPORT", "PGHOST", "PGHOSTADDR", "PGUSER"):
            env.pop(var, None)
        try:
            return subprocess.run(
                [str(PG_BIN / args[0]), *args[1:]],
                # cwd must be readable by postgres (root's cwd often is not).
                cwd=self.base_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                # Safe to capture: with `pg_ctl -l` the postmaster's stdio goes
                # to the log file, so it does not hold our pipe open after
                # pg_ctl exits (which would make run() wait for the server).
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,  # callers turn a failure into ServiceError with the log
                **kwargs,
            )
        except subprocess.TimeoutExpired as e:
            raise ServiceError(
                f"{args[0]} timed out after {timeout}s\n{_log_tail(self.log_file)}"
            ) from e

    # -- lifecycle --------------------------------------------------------

    def _initdb(self) -> None:
        res = self._run(
            [
                "initdb",
                "-D",
                str(self.data_dir),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",  # throwaway cluster: skip fsync of the new files
            ],
            timeout=max(self.timeout, 120),
        )
        if res.returncode != 0:
            raise ServiceError(f"initdb failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        # Our settings live in their own included file so the port can be
        # rewritten if the first start loses the port race.
        with open(self.data_dir / "postgresql.conf", "a") as f:
            f.write("\ninclude 'private_services.conf'\n")
        self._write_conf()

    def _write_conf(self) -> None:
        # Written by root into a postgres-owned dir: the server only needs to
        # read it, and the file is created world-readable (umask permitting).
        conf = self.data_dir / "private_services.conf"
        conf.write_text(
            f"port = {self.port}\n"
            f"listen_addresses = '{HOST}'\n"
            f"unix_socket_directories = '{self.base_dir}'\n"
            "max_connections = 100\n"
            "fsync = off\n"
            "synchronous_commit = off\n"
            "full_page_writes = off\n"
        )
        conf.chmod(0o644)

    def _pg_ctl(
        self, action: str, *args: str, wait: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        """pg_ctl ACTION -w: waits for the server, bounded by -t (then by us)."""
        wait = self.timeout if wait is None else wait
        return self._run(
            ["pg_ctl", action, "-D", str(self.data_dir), "-w", "-t", str(int(wait)), *args],
            timeout=wait + 15,
        )

    def postmaster_pid(self) -> int | None:
        """PID of the running postmaster, or None.

        Not just "postmaster.pid exists": after a crash (or a test's SIGKILL)
        the file stays behind, and start() must not take it for a live server.
        (pg_ctl start copes with the stale file itself.)
        """
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:  # alive, owned by another user
            pass
        return pid

    def is_running(self) -> bool:
        return self.postmaster_pid() is not None

    def start(self) -> None:
        """initdb on first use, then start and wait until it accepts connections."""
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb()
        if self.is_running():
            return
        attempts = 1 if self._started_once else 3
        for attempt in range(attempts):
            res = self._pg_ctl("start", "-l", str(self.log_file))
            if res.returncode == 0:
                self._started_once = True
                return
            # pg_ctl -w may give up while the postmaster is still coming up.
            self._kill_quietly()
            if attempt + 1 < attempts and _port_in_use_error(self.log_file):
                self.port = pick_free_port()
                self._write_conf()
                continue
            break
        raise ServiceError(
            f"PostgreSQL failed to start on port {self.port} ({res.returncode}):\n"
            f"{res.stdout}{res.stderr}\n--- {self.log_file} ---\n{_log_tail(self.log_file)}"
        )

    def stop(self) -> None:
        """Fast shutdown (client sessions are cut); a no-op if not running."""
        if not self.is_running():
            return
        res = self._pg_ctl("stop", "-m", "fast")
        if res.returncode != 0:
            self._kill_quietly()
            raise ServiceError(
                f"PostgreSQL failed to stop ({res.returncode}):\n{res.stdout}{res.stderr}\n"
                f"{_log_tail(self.log_file)}"
            )

    def _kill_quietly(self) -> None:
        if self.is_running():
            with contextlib.suppress(ServiceError):
                self._pg_ctl("stop", "-m", "immediate", wait=10)

    # -- client side ------------------------------------------------------

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@{HOST}:{self.port}/{dbname}"

    def connect(self, dbname: str = "postgres", **kwargs):
        """A new psycopg connection (autocommit unless told otherwise)."""
        import psycopg

        kwargs.setdefault("autocommit", True)
        kwargs.setdefault("connect_timeout", 5)
        return psycopg.connect(self.url(dbname), **kwargs)

    def create_database(self, name: str) -> str:
        """CREATE DATABASE ``name``; returns its URL."""
        from psycopg import sql

        with self.connect() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def terminate_backends(self, dbname: str | None = None) -> int:
        """pg_terminate_backend() every other client session (of ``dbname`` if
        given); returns how many were terminated.

        Uses the two-argument form (PG 14+), which waits up to 5 s for each
        backend to actually exit, so when this returns the victims are gone
        and a test's next query on them fails deterministically.
        """
        query = (
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))"
            " FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        params: tuple = ()
        if dbname is not None:
            query += " AND datname = %s"
            params = (dbname,)
        with self.connect() as conn:
            row = conn.execute(query, params).fetchone()
        return int(row[0])

    def __repr__(self) -> str:
        return f"<PrivatePostgres {self.base_dir} port={self.port}>"


# --------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------


class PrivateRedis(_Service):
    """A private, non-persistent redis-server on 127.0.0.1:<port>.

    Runs as a child process (not daemonised) so stop() can signal and reap it.
    The port is kept across stop()/start() so clients reconnect to it.
    """

    def __init__(self, base_dir: Path | str, timeout: float = DEFAULT_TIMEOUT) -> None:
        super().__init__(base_dir, timeout)
        self.log_file = self.base_dir / "redis.log"
        self._proc: subprocess.Popen | None = None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _spawn(self) -> subprocess.Popen:
        with open(self.log_file, "ab") as log:
            return subprocess.Popen(
                [
                    REDIS_SERVER,
                    "--port",
                    str(self.port),
                    "--bind",
                    HOST,
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                    "--dir",
                    str(self.base_dir),
                    "--logfile",
                    "",  # to stdout, i.e. our log file
                ],
                cwd=self.base_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Own process group: Ctrl-C in the terminal goes to pytest,
                # which then stops us in order instead of redis dying first.
                start_new_session=True,
            )

    def _wait_ready(self, proc: subprocess.Popen) -> bool:
        """True once *our* server answers PING; False if it exited; raises on timeout."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        deadline = time.monotonic() + self.timeout
        # No client-side retries (redis-py >= 6 retries 3x with backoff by
        # default): this loop is the retry, and must notice a dead child fast.
        client = redis.Redis(
            host=HOST,
            port=self.port,
            socket_connect_timeout=1,
            socket_timeout=1,
            retry=Retry(NoBackoff(), 0),
        )
        try:
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    return False
                try:
                    # Whatever else holds the port (our server failed to bind)
                    # may accept the connection and then never answer (a
                    # TimeoutError, not a ConnectionError), or be another Redis
                    # that answers PING: check the PONG comes from our child.
                    if client.ping() and client.info("server")["process_id"] == proc.pid:
                        return True
                except redis.exceptions.RedisError:
                    pass
                time.sleep(0.02)
        finally:
            client.close()
        self._terminate(proc)
        raise ServiceError(
            f"redis-server did not answer PING on port {self.port} within {self.timeout}s\n"
            f"{_log_tail(self.log_file)}"
        )

    def start(self) -> None:
        if self.is_running():
            return
        attempts = 1 if self._started_once else 3
        for attempt in range(attempts):
            proc = self._spawn()
            if self._wait_ready(proc):
                self._proc = proc
                self._started_once = True
                return
            if attempt + 1 < attempts and _port_in_use_error(self.log_file):
                self.port = pick_free_port()
                continue
            break
        raise ServiceError(
            f"redis-server exited with {proc.returncode} on port {self.port}:\n"
            f"{_log_tail(self.log_file)}"
        )

    def stop(self) -> None:
        """SIGTERM and reap; a no-op if not running."""
        if self._proc is not None:
            self._terminate(self._proc)
            self._proc = None

    def _terminate(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def url(self, db: int = 0) -> str:
        return f"redis://{HOST}:{self.port}/{db}"

    def __repr__(self) -> str:
        return f"<PrivateRedis {self.base_dir} port={self.port}>"
