"""Test-wide setup: apps built in the test process default to in-memory tables and a scratch data
dir; worker processes started by tests use RocksDB."""
from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("TABLE_STORE", "memory://")
os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="memstream-test-"))
# The default embedder's ONNX file, made once per machine and shared by every test worker (each
# has its own DATA_DIR; writes are atomic, so concurrent sessions are safe).
os.environ.setdefault("EMBEDDER_CACHE_DIR", os.path.join(tempfile.gettempdir(), "memstream-test-embedder-cache"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for _name in ("KAFKA_BROKER_URL", "APP_ID", "WEB_PORT"):
    os.environ.pop(_name, None)


@pytest.fixture(scope="session")
def minilm_embedder():
    """The real local embedder (all-MiniLM-L6-v2), loaded once per test session."""
    from streams.app.services import shared_embedder

    return shared_embedder("local", 32)
