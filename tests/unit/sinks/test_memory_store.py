"""MEMORY_STORE: which destinations memories are mirrored to, refused at start when it names an
unknown one or one without its settings; off by default."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

import sinks.routing as routing
from sinks.chroma import ChromaDestination
from sinks.pgvector import PgVectorDestination
from streams.settings import Settings
from streams.settings.sinks import MEMORY_STORES, MemoryStoreError


async def _no_dead_letters(letter) -> None:
    raise AssertionError("not used")


def test_every_name_memory_store_takes_is_a_destination() -> None:
    assert [d.name for d in routing.DESTINATIONS] == ["opensearch", "s3vectors", "pgvector", "chroma"]
    assert sorted(MEMORY_STORES) == sorted(d.name for d in routing.DESTINATIONS)


def test_off_by_default() -> None:
    assert Settings().sinks.memory_stores == ()
    assert routing.configured(Settings()) == []


def test_it_names_the_destinations_in_any_case_and_spacing() -> None:
    settings = Settings(memory_store=" PGvector , chroma,pgvector ", pgvector_url="postgresql://db/x",
                        chroma_path="/tmp/c")
    assert settings.sinks.memory_store == "pgvector,chroma"
    assert Settings(memory_store=" , ").sinks.memory_store is None, "blank: unset"
    assert routing.configured(settings) == ["pgvector", "chroma"]


def test_named_destinations_are_the_only_ones_on() -> None:
    settings = Settings(memory_store="pgvector", pgvector_url="postgresql://db/x",
                        opensearch_url="http://os:9200", s3vectors_bucket="b", s3vectors_index="i")
    assert routing.configured(settings) == ["pgvector"], "named: only what it names"
    unnamed = settings.with_values(memory_store=None)
    assert routing.configured(unnamed) == ["opensearch", "s3vectors"], "unset: as before it existed"


def test_an_unknown_name_is_an_error_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="MEMORY_STORE names redis, qdrant: the destinations are "
                                              "s3vectors, opensearch, pgvector, chroma"):
        Settings(memory_store="pgvector,redis,qdrant", pgvector_url="postgresql://db/x")
    monkeypatch.setenv("MEMORY_STORE", "pgvectors")
    with pytest.raises(ValidationError, match="MEMORY_STORE names pgvectors"):
        Settings()


@pytest.mark.parametrize(("store", "needs"), [("pgvector", "PGVECTOR_URL"), ("chroma", "CHROMA_PATH or CHROMA_URL"),
                                               ("opensearch", "OPENSEARCH_URL")])
def test_a_named_destination_without_its_settings_is_an_error_at_start(store: str, needs: str) -> None:
    with pytest.raises(ValidationError, match=f"MEMORY_STORE={store}: {store} needs {needs}"):
        Settings(memory_store=store)
    assert issubclass(MemoryStoreError, ValueError)


def test_the_plans_build_each_destination_from_its_settings() -> None:
    settings = Settings(memory_store="pgvector,chroma", pgvector_url="postgresql://db/x",
                        pgvector_schema="mem", chroma_url="http://chroma:8000", chroma_collection="team-a",
                        embedder="local")
    pg, chroma = routing.make_plans(settings, _no_dead_letters)
    assert isinstance(pg.runner.destination, PgVectorDestination)
    assert (pg.runner.destination.schema, pg.runner.destination.dimension) == ("mem", 384)
    assert isinstance(chroma.runner.destination, ChromaDestination)
    assert chroma.runner.destination.collection_name == "team-a"
    assert pg.records_of is chroma.records_of is routing.memory_records
    assert pg.runner.config == routing.runner_config(settings)


def test_s3vectors_named_uses_the_s3v_bucket_and_index_when_its_own_are_unset(monkeypatch) -> None:
    for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    [plan] = routing.make_plans(Settings(memory_store="s3vectors", s3v_bucket="vb", s3v_index_memory="vi"),
                                _no_dead_letters)
    client = plan.runner.destination._client  # type: ignore[attr-defined]
    assert (plan.runner.name, client.bucket, client.index) == ("s3vectors", "vb", "vi")


def test_a_schema_that_is_not_a_plain_identifier_is_refused() -> None:
    with pytest.raises(ValidationError, match="pgvector_schema"):
        Settings(pgvector_schema='x"; DROP TABLE store; --')
