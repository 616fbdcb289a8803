"""`bench restart` (issue 47): its fill is what dedup creates memories from without the model, its
log milestones and ratios are read right, and, end to end at a tiny size, every memory is there
after a clean restart and after a `kill -9` of worker, broker and object store."""
from __future__ import annotations

import asyncio
import io
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from benchmarks.bench_restart import (
    candidates,
    disk_bytes,
    expected_counts,
    log_timeline,
    ratios,
    render,
    run_restart_bench,
    sealed_records,
    user_name,
)
from streams.app.inprocess import InProcessPipeline
from streams.memory.vector_index import decode_vector
from streams.pipeline.dedup import parse_candidates
from streams.pipeline.records import Record
from streams.privacy.crypto import new_key
from streams.privacy.sealed import Sealer
from streams.privacy.user_keys import UserKeys
from streams.providers.embedders import MINILM_INT8_PROFILE
from streams.settings import Settings
from topics.names import MEMORY_CANDIDATES

MEMORIES, USERS = 50, 5


def test_the_fill_is_distinct_unit_vectors_spread_over_the_users():
    items = list(candidates(MEMORIES, USERS))
    assert len({(c.turn.user_id, c.turn.turn_id) for c in items}) == MEMORIES
    assert {u: sum(c.turn.user_id == u for c in items) for u in expected_counts(MEMORIES, USERS)} \
        == expected_counts(MEMORIES, USERS) == {user_name(u): 10 for u in range(USERS)}
    vectors = [decode_vector(c.vector_b64) for c in items]
    assert all(v.shape == (MINILM_INT8_PROFILE.dim,) and abs(np.linalg.norm(v) - 1) < 1e-2 for v in vectors)
    # far below every dedup band (0.89 and up): dedup creates, never merges
    assert max(float(a @ b) for a, b in combinations(vectors, 2)) < 0.5
    assert len({c.fact.summary for c in items}) == MEMORIES
    assert list(candidates(MEMORIES, USERS)) == items, "deterministic"


def test_a_users_times_stay_inside_the_write_budget():
    """15 memories an event-time hour per user, under the 20 new semantic memories a budget
    allows: none is down-ranked."""
    mine = [c.turn.ts for c in candidates(60, 1)]
    assert max(sum(1 for t in mine if start <= t < start + (mine[15] - mine[0])) for start in mine) <= 15


def test_the_records_open_as_the_dedup_stage_reads_them():
    master = new_key()
    items = list(candidates(MEMORIES, USERS))
    records = list(sealed_records(items, master))
    assert {user for user, _ in records} == set(expected_counts(MEMORIES, USERS))
    opened = []
    for offset, (user, value) in enumerate(records):
        parsed = parse_candidates(Record(MEMORY_CANDIDATES, 0, offset, user.encode(), value),
                                  Sealer(UserKeys({}, master)))
        assert isinstance(parsed, list) and {c.turn.user_id for c in parsed} == {user}
        opened += parsed
    assert sorted(opened, key=lambda c: int(c.turn.turn_id)) == items
    wrong = parse_candidates(Record(MEMORY_CANDIDATES, 0, 0, None, records[0][1]), Sealer(UserKeys({}, new_key())))
    assert not isinstance(wrong, list), "sealed: only the stack's master key opens them"


class NoModel:
    """The default embedder's profile; embedding anything fails the test."""

    profile = MINILM_INT8_PROFILE

    def embed(self, texts):  # pragma: no cover - must not run
        raise AssertionError("the fill must not pay the model")


def test_dedup_creates_every_memory_of_the_fill_without_the_model(tmp_path):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), NoModel())  # type: ignore[arg-type]

    async def fill() -> None:
        for user, value in sealed_records(list(candidates(MEMORIES, USERS)), pipeline.sealed.keys.master_key):
            await pipeline.topics.send(MEMORY_CANDIDATES, user.encode(), value)
        await pipeline.deliver()

    asyncio.run(fill())
    assert pipeline.outcomes() == {"created": MEMORIES}
    assert {u: len(pipeline.store.user_index(u)) for u in expected_counts(MEMORIES, USERS)} \
        == expected_counts(MEMORIES, USERS)


def test_the_log_timeline_reads_both_formats_from_the_start(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text(
        "2026-12-01 10:00:03,500 INFO streams.providers.llm.factory: no LLM configured\n"
        "[2026-12-01 10:00:04,000] [1] [INFO] [^--DrainingProducer]: Starting... \n"
        "a line without a time\n"
        "[2026-12-01 10:00:09,250] [1] [INFO] opening partition 0 for gen id 1 app id 1 \n"
        "[2026-12-01 10:00:09,300] [1] [INFO] opening partition 1 for gen id 1 app id 1 \n"
        "[2026-12-01 10:00:12,000] [1] [INFO] embedder ready: all-MiniLM-L6-v2 \n"
        "[2026-12-01 10:00:14,000] [1] [INFO] vector index rebuilt from the memories table: 9 memories \n"
        "[2026-12-01 10:00:15,000] [1] [INFO] ready: consuming chat.turns partitions 0, 1 \n")
    from datetime import datetime

    since = datetime(2026, 12, 1, 10, 0, 0).timestamp()  # local time, as the log's
    assert log_timeline(log, since) == {
        "first_log_line": 3.5, "faust_starting": 4.0, "partitions_assigned": 9.25,
        "embedder_ready": 12.0, "index_rebuilt": 14.0, "announced_ready": 15.0}
    assert log_timeline(tmp_path / "none.log", since) == {}


def test_ratios_put_each_restart_over_the_rebuild_alone():
    report = {"rebuild_alone": {"sliced_s": 4.0, "one_go_s": 5.0},
              "restarts": {"clean": {"start": {"first_query_s": 6.0}},
                           "killed": {"start": {"first_query_s": 10.0}}}}
    assert ratios(report) == {"clean": 1.5, "killed": 2.5}
    report["rebuild_alone"]["sliced_s"] = 0
    assert ratios(report) == {"clean": None, "killed": None}


def test_expected_counts_and_disk_bytes(tmp_path):
    assert expected_counts(7, 3) == {user_name(0): 3, user_name(1): 2, user_name(2): 2}
    assert expected_counts(2, 5) == {user_name(0): 1, user_name(1): 1}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 10_000)
    assert disk_bytes(tmp_path) >= 10_000 and disk_bytes(tmp_path / "missing") == 0


@pytest.mark.integration
@pytest.mark.slow
def test_restart_bench_end_to_end_at_a_tiny_size(tmp_path: Path):
    """A fresh broker on disk and a worker, 50 memories of 5 users, a clean restart and a
    kill -9 of all three processes, the rebuild alone: every memory answers after each start."""
    out = io.StringIO()
    report = run_restart_bench(MEMORIES, USERS, Console(file=out, width=120), base_cost=False,
                               workdir=tmp_path)
    assert report["fill"]["outcomes"] == {"created": MEMORIES}
    assert set(report["restarts"]) == {"clean", "killed"}
    for name, phase in report["restarts"].items():
        start = phase["start"]
        assert phase["all_there"] and phase["memories_found"] == MEMORIES, name
        assert 0 < start["broker_listening_s"] <= start["health_ready_s"] <= start["first_query_s"], name
        assert start["first_query_items"] > 0, name
        assert {"first_log_line", "partitions_assigned", "index_rebuilt"} <= set(start["timeline"]), name
    assert report["restarts"]["killed"]["stop"] == "kill -9"
    assert report["all_memories_there"]
    assert report["disk_bytes"]["broker_store"] > 0 and report["disk_bytes"]["worker_tables"] > 0
    assert set(report["ratio"]) == {"clean", "killed"} and report["rebuild_alone"]["sliced_s"] >= 0
    assert (tmp_path / "filled" / "worker-3.log").exists(), "the kept directory holds each start's log"
    render(report, Console(file=out, width=120))
    assert "first query answered" in out.getvalue()


def test_the_command_is_registered_with_its_options(monkeypatch):
    from typer.testing import CliRunner

    from streams.cli import bench, main

    shown = CliRunner().invoke(main.app, ["bench", "restart", "--help"])
    assert shown.exit_code == 0
    assert all(option in shown.stdout for option in ("--memories", "--users", "--json", "--keep"))
    monkeypatch.setattr(bench, "BENCH_PACKAGE", "benchmarks_not_installed")
    refused = CliRunner().invoke(main.app, ["bench", "restart", "--memories", "10"])
    assert refused.exit_code == 2 and refused.stderr.strip() == bench.NOT_IN_THE_WHEEL
