"""Real servers for ``@pytest.mark.services`` tests: PostgreSQL, a moto S3 server and
``mlflow server``, all on 127.0.0.1 with free ports, each stopped by its own PID.

Reusable pieces::

    pg = start_postgres()                 # a throw-away cluster in a temporary folder
    create_database(pg.port, "mlflow")
    s3 = start_moto()                     # S3 API at s3.url
    create_bucket(s3.url, "clapcap")
    srv = start_mlflow_server(backend_uri=pg.sqlalchemy_uri("mlflow"),
                              artifacts_destination="s3://clapcap/mlartifacts", s3_url=s3.url, log_dir=...)
    ...
    srv.stop(); s3.stop(); pg.stop()

or all three at once with :func:`mlflow_stack` (a context manager that stops them in a
``finally``).

PostgreSQL's ``initdb`` refuses to run as root. As root (sessions and CI here) the cluster
belongs to the ``postgres`` user: ``initdb`` and ``pg_ctl`` run through ``runuser -u postgres``
and the cluster's folder is a fresh ``/tmp/clapcap-pg-*`` owned by that user (pytest's
``tmp_path`` lies under a root-only ``/tmp/pytest-of-root``, which ``postgres`` cannot enter).
As any other user both run directly, as that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
PG_USER = "postgres"
# Dummy credentials: moto accepts any; boto3 and MLflow refuse to sign requests without some.
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


class ServiceError(RuntimeError):
    """A server did not start or answer; the message names its log file."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError as exc:
        return f"(no log: {exc})"


def pg_binary(name: str) -> str:
    """Path of a PostgreSQL program (``initdb``, ``pg_ctl``).

    Raises:
        ServiceError: when it is on neither PATH, /usr/local/bin nor /usr/lib/postgresql/*/bin.
    """
    found = shutil.which(name) or shutil.which(name, path="/usr/local/bin")
    if found is None:
        candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
        found = str(candidates[-1]) if candidates else None
    if found is None:
        raise ServiceError(f"PostgreSQL's {name} is not installed (looked on PATH, /usr/local/bin, "
                           f"/usr/lib/postgresql/*/bin); install PostgreSQL 15 (apt-get install postgresql)")
    return found


def _as_pg_owner(cmd: list[str]) -> list[str]:
    """``cmd`` run as the cluster owner: ``postgres`` via runuser when we are root, else ourselves."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser") is None:
        raise ServiceError("running as root, but `runuser` is missing: initdb refuses root, so it must "
                           f"run as the {PG_USER!r} user")
    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        raise ServiceError(f"running as root, but there is no {PG_USER!r} user to own the cluster (initdb "
                           "refuses root); Debian's postgresql package creates it, or run the tests as "
                           "a non-root user") from None
    return ["runuser", "-u", PG_USER, "--", *cmd]


@dataclass
class Postgres:
    """A running PostgreSQL cluster (stop it with :meth:`stop`)."""

    data_dir: Path
    port: int
    log: Path
    pid: int = 0

    def sqlalchemy_uri(self, database: str) -> str:
        """The URI MLflow takes (``postgresql+psycopg2://``: the bare form asks for psycopg 3)."""
        return f"postgresql+psycopg2://{PG_USER}@{HOST}:{self.port}/{database}"

    def stop(self) -> None:
        """``pg_ctl stop -m fast``, then SIGKILL the postmaster if it is still there; removes the folder."""
        try:
            subprocess.run(_as_pg_owner([pg_binary("pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w",
                                         "stop"]), capture_output=True, timeout=30, check=False)
        finally:
            if self.pid and _alive(self.pid):
                os.kill(self.pid, signal.SIGKILL)
            shutil.rmtree(self.data_dir.parent, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def _pg_folder() -> Path:
    """A fresh folder for one cluster that the cluster's owner can enter and own."""
    root = Path(tempfile.mkdtemp(prefix="clapcap-pg-"))
    data = root / "data"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, user=PG_USER)
        shutil.chown(data, user=PG_USER)
        root.chmod(0o755)
    data.chmod(0o700)
    return data


def start_postgres(*, timeout: float = 60.0) -> Postgres:
    """initdb a cluster in a temporary folder and start it on a free port (trust auth, user
    ``postgres``, Unix socket in the data folder, TCP on 127.0.0.1 only).

    Raises:
        ServiceError: when initdb or pg_ctl fails (with their output or the server log).
    """
    data = _pg_folder()
    log = data.parent / "postgres.log"
    if os.geteuid() == 0:
        log.touch()
        shutil.chown(log, user=PG_USER)
    init = subprocess.run(_as_pg_owner([pg_binary("initdb"), "-D", str(data), "-A", "trust", "-U", PG_USER,
                                        "--no-sync", "-E", "UTF8"]), capture_output=True, text=True, timeout=120)
    if init.returncode != 0:
        shutil.rmtree(data.parent, ignore_errors=True)
        raise ServiceError(f"initdb failed ({init.returncode}): {init.stderr.strip() or init.stdout.strip()}")
    port = free_port()
    opts = f"-p {port} -k {data} -c listen_addresses={HOST} -c fsync=off"
    server = Postgres(data_dir=data, port=port, log=log)
    start = subprocess.run(_as_pg_owner([pg_binary("pg_ctl"), "-D", str(data), "-o", opts, "-l", str(log),
                                         "-w", "-t", str(int(timeout)), "start"]),
                           capture_output=True, text=True, timeout=timeout + 10)
    pid_file = data / "postmaster.pid"
    if pid_file.is_file():
        server.pid = int(pid_file.read_text().split()[0])
    if start.returncode != 0:
        server.stop()
        raise ServiceError(f"pg_ctl start failed ({start.returncode}): {start.stderr.strip()}\n"
                           f"{log}:\n{_tail(log)}")
    return server


def create_database(port: int, name: str) -> None:
    """``CREATE DATABASE name`` on the cluster at ``port`` (psycopg2, autocommit)."""
    import psycopg2

    conn = psycopg2.connect(host=HOST, port=port, user=PG_USER, dbname="postgres")
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
    finally:
        conn.close()


@dataclass
class Process:
    """A server we started with Popen (stopped by its PID with :meth:`stop`)."""

    name: str
    proc: subprocess.Popen
    url: str
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the process group it leads, wait, then SIGKILL it."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=timeout)
        except ProcessLookupError:
            pass


def _spawn(name: str, cmd: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        # Its own session: stop() signals the server and the workers it forks, nothing else.
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, **env},
                                start_new_session=True)


def wait_http(url: str, proc: subprocess.Popen, log: Path, *, timeout: float) -> float:
    """Poll ``url`` until it answers 2xx; returns the seconds waited.

    Raises:
        ServiceError: when the process exits or ``timeout`` passes (with the log's tail).
    """
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            raise ServiceError(f"{url}: server exited with {proc.returncode}; {log}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if 200 <= resp.status < 300:
                    return time.monotonic() - start
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.3)
    raise ServiceError(f"{url} did not answer within {timeout:.0f} s; {log}:\n{_tail(log)}")


def _ready(server: Process, health_path: str, timeout: float) -> Process:
    """``server`` once ``health_path`` answers; stopped (by its PID) when it never does."""
    try:
        wait_http(f"{server.url}{health_path}", server.proc, server.log, timeout=timeout)
    except ServiceError:
        server.stop()
        raise
    return server


def start_moto(log_dir: Path, *, timeout: float = 30.0) -> Process:
    """A moto S3 server on a free port (``moto.server``, the ``moto_server`` command)."""
    port = free_port()
    log = Path(log_dir) / "moto.log"
    proc = _spawn("moto", [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)], log, S3_ENV)
    return _ready(Process("moto", proc, f"http://{HOST}:{port}", log, dict(S3_ENV)), "/moto-api/", timeout)


def s3_client(endpoint: str):  # noqa: ANN201 - boto3 client
    """A boto3 S3 client on ``endpoint`` with the dummy credentials."""
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=S3_ENV["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=S3_ENV["AWS_SECRET_ACCESS_KEY"],
                        region_name=S3_ENV["AWS_DEFAULT_REGION"])


def create_bucket(endpoint: str, bucket: str) -> None:
    """Create ``bucket`` on the S3 server at ``endpoint``."""
    s3_client(endpoint).create_bucket(Bucket=bucket)


def list_keys(endpoint: str, bucket: str, prefix: str = "") -> list[str]:
    """Every object key in ``bucket`` under ``prefix``."""
    pages = s3_client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [obj["Key"] for page in pages for obj in page.get("Contents", [])]


def start_mlflow_server(*, backend_uri: str, log_dir: Path, artifacts_destination: str | None = None,
                        s3_url: str | None = None, timeout: float = 120.0) -> Process:
    """``mlflow server`` (one worker) on a free port, proxying artifacts to ``artifacts_destination``.

    Clients then need only ``MLFLOW_TRACKING_URI``: artifacts go through the server
    (``mlflow-artifacts:/``), which alone talks to S3 (``MLFLOW_S3_ENDPOINT_URL``).
    Without ``artifacts_destination`` it serves the backend store as it is (the UI over a
    local SQLite store, whose experiments keep their own artifact locations).
    """
    port = free_port()
    log = Path(log_dir) / "mlflow-server.log"
    env = {**S3_ENV, "MLFLOW_S3_ENDPOINT_URL": s3_url} if s3_url else {}
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", backend_uri,
           "--host", HOST, "--port", str(port), "--workers", "1"]
    if artifacts_destination:
        cmd += ["--artifacts-destination", artifacts_destination]
    proc = _spawn("mlflow", cmd, log, env)
    return _ready(Process("mlflow", proc, f"http://{HOST}:{port}", log, env), "/health", timeout)


@dataclass
class MlflowStack:
    """The three servers of :func:`mlflow_stack` and what clients need to reach them."""

    postgres: Postgres
    s3: Process
    mlflow: Process
    bucket: str
    startup_seconds: dict[str, float]

    @property
    def tracking_uri(self) -> str:
        return self.mlflow.url

    def client_env(self) -> dict[str, str]:
        """Environment for a client process (another machine): the tracking URI is enough;
        the S3 variables are there for clients that read the bucket directly."""
        return {"MLFLOW_TRACKING_URI": self.tracking_uri, "MLFLOW_S3_ENDPOINT_URL": self.s3.url, **S3_ENV}


@contextmanager
def mlflow_stack(log_dir: Path, *, bucket: str = "clapcap", database: str = "mlflow") -> Iterator[MlflowStack]:
    """PostgreSQL + moto S3 + ``mlflow server``; every server is stopped by its PID on exit."""
    times: dict[str, float] = {}
    with ExitStack() as stack:
        t0 = time.monotonic()
        pg = start_postgres()
        stack.callback(pg.stop)
        create_database(pg.port, database)
        times["postgres"] = time.monotonic() - t0
        t0 = time.monotonic()
        s3 = start_moto(log_dir)
        stack.callback(s3.stop)
        create_bucket(s3.url, bucket)
        times["moto"] = time.monotonic() - t0
        t0 = time.monotonic()
        srv = start_mlflow_server(backend_uri=pg.sqlalchemy_uri(database),
                                  artifacts_destination=f"s3://{bucket}/mlartifacts", s3_url=s3.url, log_dir=log_dir)
        stack.callback(srv.stop)
        times["mlflow"] = time.monotonic() - t0
        yield MlflowStack(pg, s3, srv, bucket, times)
