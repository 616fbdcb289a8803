"""A local S3 service for the broker's durable storage: moto's server mode in a child process.

Tansu's `s3://` engine keeps topics as objects and coordinates its metadata with conditional
PUTs; moto's server honours `If-None-Match: *` and `If-Match: <etag>` on PutObject (checked by
`tests/integration/test_broker_storage.py`), so a broker on it survives a restart with its topics,
records and committed offsets. A stand-in for AWS S3, which cannot run here.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import boto3

from streams.tools.broker import S3Storage, _die_with_parent, free_port, wait_for_port


class LocalS3:
    """moto's S3 on 127.0.0.1 with one bucket. Use as a context manager; yields the `S3Storage`."""

    def __init__(self, log_path: Path, bucket: str = "tansu") -> None:
        self.log_path = log_path
        self.bucket = bucket
        self._proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> S3Storage:
        port = free_port()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        wait_for_port("127.0.0.1", port, timeout, self._proc)
        storage = S3Storage(endpoint=f"http://127.0.0.1:{port}", bucket=self.bucket)
        self.client(storage).create_bucket(Bucket=self.bucket)
        return storage

    @staticmethod
    def client(storage: S3Storage):  # type: ignore[no-untyped-def]
        """A boto3 S3 client of `storage`'s endpoint with its credentials."""
        return boto3.client("s3", endpoint_url=storage.endpoint, region_name=storage.region,
                            aws_access_key_id=storage.access_key_id,
                            aws_secret_access_key=storage.secret_access_key)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(10)

    def __enter__(self) -> S3Storage:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
