"""The pure helpers of `bench locomo`'s scale-out, model-CPU and Kafka-bytes figures (issue 22)."""
from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.structs import TopicPartition
from prometheus_client import CollectorRegistry
from prometheus_client import Counter as PromCounter
from prometheus_client import generate_latest

from benchmarks.bench import workers_summed
from benchmarks.bench_scale import (
    TopicTraffic,
    WorkerRun,
    copy_label,
    delta_by_label,
    interleaved,
    metric_by_label,
    metric_total,
    model_cpu,
    partition_of,
    per_turn,
    record_bytes,
    scale_out_report,
    single_worker_cpu,
    scaling_efficiency,
    spread_copies,
    stage_cpu,
    thread_cpu,
    written_ranges,
)
from streams.tools.locomo import LocomoConversation
from streams.tools.stack import settled, turn_partitions
from topics.turns import Turn


def conversation(user: str, turns: int = 3) -> LocomoConversation:
    ts = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    return LocomoConversation(
        user_id=user, speakers=("A", "B"), questions=[],
        turns=[Turn(user_id=user, thread_id="t", turn_id=f"D1:{i}", role="user", text=f"hi {i}", ts=ts)
               for i in range(turns)])


def test_partition_of_is_the_producers_partitioner():
    parts = list(range(16))
    for key in ("a", "bench12ab-0-conv-26", "user-ü", "x" * 200):
        assert partition_of(key, 16) == DefaultPartitioner()(key.encode(), parts, parts)


def test_interleaved_takes_the_workers_partitions_in_turn_then_the_rest():
    assert interleaved([[1, 3, 5], [0, 2]], 8) == [1, 0, 3, 2, 5, 4, 6, 7]
    assert interleaved([], 3) == [0, 1, 2]
    assert interleaved([[2], [2]], 3) == [2, 0, 1]  # a partition listed twice counts once


def test_spread_copies_puts_the_users_evenly_on_the_partitions():
    convs = [conversation(f"conv-{i}") for i in range(6)]
    copies = spread_copies(convs, 3, 8, "benchx-")
    users = [c.user_id for c, _ in copies]
    assert len(set(users)) == 18
    load = Counter(partition_of(u, 8) for u in users)
    assert set(load) == set(range(8)) and max(load.values()) - min(load.values()) <= 1
    assert [n for _, n in copies] == [0, 1, 2] * 6  # each file's copies together, numbered
    first, _ = copies[0]
    assert first.user_id.startswith("benchx-0") and first.user_id.endswith("-conv-0")
    assert {t.user_id for t in first.turns} == {first.user_id}  # its turns renamed too
    assert [t.turn_id for t in first.turns] == [t.turn_id for t in convs[0].turns]
    assert spread_copies(convs, 3, 8, "benchx-") == copies  # deterministic


def test_fewer_users_than_partitions_go_to_the_workers_in_turn():
    order = interleaved([[1, 3, 5, 7], [0, 2, 4, 6]], 8)
    copies = spread_copies([conversation("conv-30")], 2, 8, "s-", order)
    assert [partition_of(c.user_id, 8) for c, _ in copies] == [1, 0]  # one on each worker


def test_copy_labels_name_the_copies_only_when_there_are_several():
    assert copy_label("conv-26.json", 0, 1) == "conv-26.json"
    assert [copy_label("conv-26.json", i, 2) for i in range(2)] == ["conv-26.json#u0", "conv-26.json#u1"]


def test_metric_total_sums_a_counter_over_its_labels():
    registry = CollectorRegistry()
    counter = PromCounter("memstream_turns_total", "t", ["outcome"], registry=registry)
    other = PromCounter("memstream_turns_other_total", "o", registry=registry)
    declared = generate_latest(registry).decode()
    assert metric_total(declared, "memstream_turns_total") == 0.0  # declared, no series yet
    counter.labels(outcome="candidates").inc(7)
    counter.labels(outcome="skipped").inc(3)
    other.inc(100)
    text = generate_latest(registry).decode()
    assert metric_total(text, "memstream_turns_total") == 10.0
    assert metric_total(text, "memstream_absent_total") is None  # an older worker
    assert metric_total(None, "memstream_turns_total") is None


def test_scaling_efficiency_is_the_rate_over_n_single_workers():
    assert scaling_efficiency(170.0, 2, 119.0) == round(170 / 238, 3)
    assert scaling_efficiency(480.0, 4, 120.0) == 1.0
    assert scaling_efficiency(100.0, 2, None) is None
    assert scaling_efficiency(100.0, 2, 0.0) is None


def test_scale_out_report_per_worker():
    runs = [WorkerRun("http://w0", [0, 2], turns=300, cpu_seconds=6.0, model_cpu_seconds=1.5,
                      thread_cpu_seconds={"event_loop": 3.8, "model": 1.4}),
            WorkerRun("http://w1", [1, 3], turns=100, cpu_seconds=2.0, model_cpu_seconds=0.5)]
    report = scale_out_report(runs, turns=400, seconds=4.0, partitions=4, users=8, users_per_file=4,
                              single_worker_turns_per_s=80.0, single_worker_source="given",
                              broker_cpu_seconds=1.0)
    assert report["turns_per_s"] == 100.0 and report["scaling_efficiency"] == 0.625
    assert report["broker_cores_busy"] == 0.25 and report["workers"] == 2
    w0, w1 = report["per_worker"]
    assert w0 == {"worker": 0, "api_url": "http://w0", "partitions": [0, 2], "turns": 300,
                  "turn_share": 0.75, "cpu_seconds": 6.0, "cores_busy": 1.5,
                  "cpu_ms_per_turn": 20.0, "model_cpu_seconds": 1.5, "event_loop_cores_busy": 0.95}
    assert w1["turn_share"] == 0.25 and w1["cores_busy"] == 0.5
    assert w1["event_loop_cores_busy"] is None  # a worker without the thread metric
    unknown = scale_out_report([WorkerRun("http://ext")], turns=10, seconds=1.0, partitions=4,
                               users=1, users_per_file=1, single_worker_turns_per_s=None,
                               single_worker_source=None, broker_cpu_seconds=None)
    row = unknown["per_worker"][0]
    assert row["turns"] is None and row["cores_busy"] is None and row["cpu_ms_per_turn"] is None
    assert unknown["scaling_efficiency"] is None and unknown["broker_cores_busy"] is None


def test_the_one_worker_drains_cpu_is_reported_beside_the_n_workers():
    """`--scaling`: the one worker's CPU a turn and cores busy, to compare with each of the N
    workers' (a worker's CPU a turn that grows with N is contention for the machine's cores)."""
    one = single_worker_cpu(WorkerRun("http://w", turns=400, cpu_seconds=6.0, model_cpu_seconds=2.0),
                            seconds=4.0)
    assert one == {"cores_busy": 1.5, "cpu_ms_per_turn": 15.0, "model_ms_per_turn": 5.0}
    assert single_worker_cpu(WorkerRun("http://w", turns=400), 4.0) == {
        "cores_busy": None, "cpu_ms_per_turn": None, "model_ms_per_turn": None}
    report = scale_out_report([WorkerRun("http://w0", turns=400)], turns=400, seconds=2.0,
                              partitions=4, users=4, users_per_file=1,
                              single_worker_turns_per_s=100.0, single_worker_source="measured",
                              broker_cpu_seconds=None, single_worker_cpu=one)
    assert report["single_worker_cpu"] == one


def test_model_cpu_is_reported_apart_from_the_rest():
    runs = [WorkerRun("a", model_cpu_seconds=1.5), WorkerRun("b", model_cpu_seconds=0.5)]
    assert model_cpu(runs, 400, 12.0) == {"model_ms_per_turn": 5.0, "rest_ms_per_turn": 7.0}
    assert model_cpu(runs, 400, None) == {"model_ms_per_turn": 5.0, "rest_ms_per_turn": None}
    assert model_cpu([WorkerRun("a")], 400, 12.0) == {"model_ms_per_turn": None,
                                                       "rest_ms_per_turn": None}


def test_the_event_loops_cpu_is_reported_by_stage_summed_over_the_workers():
    registry = CollectorRegistry()
    counter = PromCounter("memstream_stage_cpu_seconds", "stage CPU", ["stage"], registry=registry)
    assert metric_by_label(generate_latest(registry).decode(), "memstream_stage_cpu_seconds_total",
                           "stage") == {}
    counter.labels(stage="ingest").inc(1.0)
    before = metric_by_label(generate_latest(registry).decode(), "memstream_stage_cpu_seconds_total",
                             "stage")
    counter.labels(stage="ingest").inc(0.5)
    counter.labels(stage="dedup").inc(2.0)
    after = metric_by_label(generate_latest(registry).decode(), "memstream_stage_cpu_seconds_total",
                            "stage")
    assert delta_by_label(before, after) == {"ingest": 0.5, "dedup": 2.0}
    assert metric_by_label("", "memstream_stage_cpu_seconds_total", "stage") is None
    assert metric_by_label(None, "memstream_stage_cpu_seconds_total", "stage") is None

    runs = [WorkerRun("a", stage_cpu_seconds={"ingest": 0.5, "dedup": 2.0}),
            WorkerRun("b", stage_cpu_seconds={"dedup": 1.0, "lifecycle": 0.8})]
    assert stage_cpu(runs, 400) == {"stages_ms_per_turn": {"dedup": 7.5, "lifecycle": 2.0,
                                                           "ingest": 1.25}}
    assert stage_cpu([*runs, WorkerRun("c")], 400) == {"stages_ms_per_turn": None}


def test_the_workers_cpu_is_reported_by_thread_summed_over_the_workers():
    runs = [WorkerRun("a", thread_cpu_seconds={"event_loop": 4.0, "kafka_consumer": 0.4}),
            WorkerRun("b", thread_cpu_seconds={"event_loop": 3.6, "model": 2.0})]
    assert thread_cpu(runs, 400) == {"threads_ms_per_turn": {"event_loop": 19.0, "model": 5.0,
                                                             "kafka_consumer": 1.0}}
    assert thread_cpu([*runs, WorkerRun("c")], 400) == {"threads_ms_per_turn": None}


def test_workers_cpu_is_summed_for_the_cpu_section():
    snap = {"worker-0": 2.0, "worker-1": 3.5, "broker": 1.0, "bench": 0.5}
    assert workers_summed(snap) == {"worker": 5.5, "broker": 1.0, "bench": 0.5}
    assert workers_summed({"worker-0": None, "broker": 1.0})["worker"] is None


def test_a_settled_assignment_holds_each_partition_once():
    assert settled([[0, 2], [1, 3]], 4)
    assert not settled([[0, 1, 2, 3], []], 4)  # the second worker has not joined yet
    assert not settled([[0, 1, 2], [2, 3]], 4)  # in flux: a partition on both
    assert not settled([[0, 2], [1]], 4)  # one unassigned
    assert settled([[0], [1], []], 2)  # more workers than partitions
    assert settled([[0, 1, 2, 3]], 4)


def test_turn_partitions_reads_health():
    health = {"ready": True, "assigned": {"chat.turns": [1, 3], "memory.events": [1, 3]}}
    assert turn_partitions(health, "chat.turns") == [1, 3]
    assert turn_partitions({"ready": True, "partitions": 4}, "chat.turns") == []  # older worker
    assert turn_partitions(None, "chat.turns") == []


def test_record_bytes_counts_key_value_and_headers():
    assert record_bytes(b"user-1", b"x" * 100) == 106
    assert record_bytes(None, None) == 0
    assert record_bytes(b"k", b"v", [("trace", b"abcd"), ("ü", None)]) == 1 + 1 + 5 + 4 + 2


def test_written_ranges_are_the_partitions_that_grew():
    a, b, c = TopicPartition("chat.turns", 0), TopicPartition("chat.turns", 1), TopicPartition("new", 0)
    ranges = written_ranges({a: 10, b: 5}, {a: 25, b: 5, c: 3})
    assert ranges == {a: (10, 25), c: (0, 3)}


def test_per_turn_traffic_by_topic_and_in_total():
    traffic = {"chat.turns": TopicTraffic(100, 35_000),
               "app-memories-changelog": TopicTraffic(105, 500_000),
               "memory.progress": TopicTraffic(205, 45_000)}
    out = per_turn(traffic, 100)
    assert out["kafka_msgs_per_turn"]["total"] == 4.1
    assert out["kafka_bytes_per_turn"]["total"] == 5800.0
    assert list(out["kafka_bytes_per_turn"]["by_topic"]) == [
        "app-memories-changelog", "memory.progress", "chat.turns"]  # the most bytes first
    assert out["kafka_msgs_per_turn"]["by_topic"]["memory.progress"] == 2.05
    assert out["kafka_written"]["records"] == 410 and out["kafka_written"]["topics"] == 3
    assert per_turn({}, 0)["kafka_msgs_per_turn"] == {"total": 0.0, "by_topic": {}}


@pytest.mark.parametrize("copies", [1, 4])
def test_copies_keep_the_questions(copies):
    conv = conversation("conv-1")
    assert all(c.questions == conv.questions for c, _ in spread_copies([conv], copies, 4, "q-"))
