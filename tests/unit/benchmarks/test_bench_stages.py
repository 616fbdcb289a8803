"""Where a bench run's time goes: the pure helpers `bench locomo` reports with (issue 14 §1)."""
import math
import os

import numpy as np

from benchmarks.bench_stages import (
    StageTimes,
    batches,
    candidate_summaries,
    cpu_report,
    dominant_queue,
    embedder_limit,
    latencies_ms,
    metric_value,
    parse_cpu_seconds,
    parse_vmrss,
    percentiles,
    process_cpu_seconds,
    rss_report,
    time_embedding,
)


def progress(stage: str, queued: float | None, work: float | None, **extra) -> dict:
    return {"user_id": "u", "thread_id": "t", "turn_id": "1", "stage": stage, "outcome": "created",
            "queued_ms": queued, "work_ms": work, **extra}


def test_stage_times_group_queueing_and_work_by_stage_in_order_seen():
    times = StageTimes()
    for i in range(1, 101):
        times.add(progress("ingest", float(i), 2.0))
    for i in range(10):
        times.add(progress("dedup", 1000.0 + i, 50.0))
    times.add(progress("dedup", None, None))  # an older worker: counted, not timed
    report = times.report()
    assert list(report) == ["ingest", "dedup"]
    assert report["ingest"]["records"] == 100 and report["dedup"]["records"] == 11
    assert report["ingest"]["queued_ms"] == {"p50": 50.5, "p95": 95.05}
    assert report["ingest"]["work_ms"] == {"p50": 2.0, "p95": 2.0}
    assert report["dedup"]["work_ms"]["p95"] == 50.0
    assert dominant_queue(report) == "dedup"


def test_a_stage_without_timings_has_nan_figures_and_no_dominant_queue():
    times = StageTimes()
    times.add(progress("commands", None, None))
    report = times.report()
    assert math.isnan(report["commands"]["queued_ms"]["p50"])
    assert dominant_queue(report) is None and dominant_queue({}) is None


def test_percentiles_of_nothing_are_nan():
    assert all(math.isnan(v) for v in percentiles([], (50, 95, 99)).values())
    assert percentiles([1.0, 2.0, 3.0], (50,)) == {"p50": 2.0}


def test_latencies_pair_keys_present_on_both_sides():
    produced = {"a": 1.0, "b": 2.0}
    done = {"a": 1.25, "b": 2.5, "c": 9.0}  # c was never produced by this run
    assert sorted(latencies_ms(produced, done)) == [250.0, 500.0]


def test_candidate_summaries_are_the_runs_candidate_events_once_each():
    events = [
        {"event_id": "e1", "kind": "candidate", "user_id": "u1", "summary": "Ana has a cat."},
        {"event_id": "e1", "kind": "candidate", "user_id": "u1", "summary": "Ana has a cat."},  # replay
        {"event_id": "e2", "kind": "created", "user_id": "u1", "summary": "Ana has a cat."},
        {"event_id": "e3", "kind": "candidate", "user_id": "other", "summary": "Not this run."},
        {"event_id": "e4", "kind": "candidate", "user_id": "u2", "summary": "Bo lives in Porto."},
        {"event_id": "e5", "kind": "candidate", "user_id": "u2", "summary": ""},  # did not open
    ]
    assert candidate_summaries(events, {"u1", "u2"}) == ["Ana has a cat.", "Bo lives in Porto."]


def test_batches_chunk_in_order():
    assert batches(list("abcde"), 2) == [["a", "b"], ["c", "d"], ["e"]]
    assert batches([], 64) == [] and batches(["a"], 0) == [["a"]]


def test_time_embedding_calls_once_per_batch_after_a_warm_up():
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.zeros((len(texts), 3), dtype=np.float32)

    seconds = time_embedding(embed, [f"t{i}" for i in range(130)], 64)
    assert seconds >= 0
    assert calls[0] == ["warm up"] and [len(c) for c in calls[1:]] == [64, 64, 2]


def test_embedder_limit_is_turns_over_seconds():
    assert embedder_limit(419, 10.0) == 41.9
    assert embedder_limit(419, 0.0) is None


def test_resident_memory_from_proc_status_and_from_metrics():
    status = "Name:\tpython\nVmPeak:\t  900000 kB\nVmRSS:\t  512000 kB\nThreads:\t12\n"
    assert parse_vmrss(status) == 512000 * 1024
    assert parse_vmrss("Name:\tzombie\n") is None
    exposition = ("# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                  "# TYPE process_resident_memory_bytes gauge\n"
                  "process_resident_memory_bytes_other 1\n"
                  "process_resident_memory_bytes 5.24288e+08\n")
    assert metric_value(exposition, "process_resident_memory_bytes") == 524288000.0
    assert metric_value("memstream_x 1\n", "process_resident_memory_bytes") is None


def test_rss_report_divides_the_growth_by_the_memories_stored():
    assert rss_report(100 * 2**20, 110 * 2**20, 1024) == {
        "start": 100 * 2**20, "after_ingest": 110 * 2**20, "grown": 10 * 2**20, "per_memory": 10240.0}
    assert rss_report(None, 5, 10)["per_memory"] is None
    assert rss_report(5, 9, 0)["per_memory"] is None


def test_cpu_seconds_from_proc_stat_even_with_parentheses_in_the_name():
    stat = "4075 (python3 (x) y) S 1 4075 1 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 9 0 1 2 3"
    assert parse_cpu_seconds(stat, 100.0) == 3.0  # (250 + 50) ticks at 100 a second
    assert parse_cpu_seconds("4075 (python3) S 1", 100.0) is None


def test_this_process_cpu_is_read_and_never_goes_back():
    first = process_cpu_seconds(os.getpid())
    sum(i * i for i in range(200_000))
    assert first is not None and process_cpu_seconds(os.getpid()) >= first
    assert process_cpu_seconds(2**22 + 12345) is None  # no such process


def test_cpu_report_gives_ms_per_turn_and_the_cores_kept_busy():
    report = cpu_report({"worker": 10.0, "broker": 2.0, "bench": None},
                        {"worker": 30.0, "broker": 3.0, "bench": 5.0}, turns=1000, seconds=20.0)
    assert report["ms_per_turn"] == {"worker": 20.0, "broker": 1.0}
    assert report["cores_busy"] == 1.05
