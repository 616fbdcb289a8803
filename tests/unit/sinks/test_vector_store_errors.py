"""The pgvector and Chroma sinks' errors follow the sink contract and never carry content (a
dead letter's reason is not sealed for its user)."""
from __future__ import annotations

import httpx
import psycopg
import pytest
from chromadb.errors import InvalidArgumentError

from sinks.base import PermanentSinkError, TransientSinkError
from sinks.chroma import ChromaDestination
from sinks.pgvector import _raise_for

SECRET = "Ana's secret diagnosis"


async def test_chroma_refusals_are_permanent_and_name_no_content() -> None:
    destination = ChromaDestination(lambda: None, dimension=3)

    def refused() -> None:
        raise InvalidArgumentError(f"metadata value {SECRET!r} is not allowed")

    with pytest.raises(PermanentSinkError) as refusal:
        await destination._call(refused)
    assert str(refusal.value) == "chroma refused the batch (InvalidArgumentError 400)"

    def unreachable() -> None:
        try:
            raise httpx.ConnectError("connection refused")
        except httpx.ConnectError:
            raise ValueError("Could not connect to a Chroma server. Are you sure it is running?")

    with pytest.raises(TransientSinkError, match="chroma unavailable"):
        await destination._call(unreachable)


def test_postgres_errors_map_by_class_and_name_no_content() -> None:
    with pytest.raises(TransientSinkError, match="postgres unavailable"):
        _raise_for(psycopg.OperationalError(f"server closed the connection while writing {SECRET}"))
    with pytest.raises(PermanentSinkError) as refusal:
        _raise_for(psycopg.errors.CheckViolation(f"Failing row contains ({SECRET})"))
    assert SECRET not in str(refusal.value) and "CheckViolation" in str(refusal.value)
