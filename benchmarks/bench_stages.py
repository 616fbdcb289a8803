"""Where the time of a `bench locomo` run goes: per-stage queueing and work, the embedder's own
limit, the worker's memory per stored memory (issue 14 §1), and the CPU each process used.

Pure helpers over what the pipeline already emits (`memory.progress` records with `queued_ms`
and `work_ms`, `memory.events` of kind `candidate`) and over the worker process; the bench
(`benchmarks.bench`) feeds them.
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np


def percentiles(values: Sequence[float], qs: tuple[int, ...]) -> dict[str, float]:
    """`{"p50": …, …}` of `values`, rounded to 0.01 (NaN when there are none)."""
    if not len(values):
        return {f"p{q}": float("nan") for q in qs}
    arr = np.asarray(values, dtype=float)
    return {f"p{q}": round(float(np.percentile(arr, q)), 2) for q in qs}


class StageTimes:
    """`queued_ms` and `work_ms` of progress records, by stage.

    A stage writes one progress record per fact it finishes (ingest one per turn), each stamped
    with how long its input record waited for the stage (`queued_ms`: from the record's
    produce time to the stage taking it) and how long the stage had worked on it by then
    (`work_ms`; dedup's includes the batch's embedding call and the records before it in the
    batch). Records without the fields (an older worker) are counted but not timed.
    """

    def __init__(self) -> None:
        self.queued: dict[str, list[float]] = {}
        self.work: dict[str, list[float]] = {}
        self.records: dict[str, int] = {}

    def add(self, progress: dict[str, Any]) -> None:
        stage = str(progress.get("stage", "?"))
        self.records[stage] = self.records.get(stage, 0) + 1
        for field_name, into in (("queued_ms", self.queued), ("work_ms", self.work)):
            value = progress.get(field_name)
            if value is not None:
                into.setdefault(stage, []).append(float(value))

    def report(self, qs: tuple[int, ...] = (50, 95)) -> dict[str, dict[str, Any]]:
        """`{stage: {"records": n, "queued_ms": {p50, p95}, "work_ms": {p50, p95}}}`, stages
        in the order first seen."""
        return {stage: {"records": n,
                        "queued_ms": percentiles(self.queued.get(stage, []), qs),
                        "work_ms": percentiles(self.work.get(stage, []), qs)}
                for stage, n in self.records.items()}


def dominant_queue(stages: dict[str, dict[str, Any]], q: str = "p95") -> str | None:
    """The stage whose queueing (`queued_ms` at `q`) is longest; None without figures."""
    timed = {s: f["queued_ms"][q] for s, f in stages.items()
             if f["queued_ms"].get(q) == f["queued_ms"].get(q)}  # NaN != NaN
    return max(timed, key=timed.__getitem__) if timed else None


def latencies_ms(start: dict[Any, float], end: dict[Any, float]) -> list[float]:
    """`end[k] - start[k]` in ms for every key in both (times in seconds, one clock)."""
    return [(end[k] - start[k]) * 1000 for k in end if k in start]


# --- the embedder alone ------------------------------------------------------------------------
def batches(texts: Sequence[str], size: int) -> list[list[str]]:
    """`texts` in consecutive chunks of at most `size` (size >= 1)."""
    size = max(int(size), 1)
    return [list(texts[i:i + size]) for i in range(0, len(texts), size)]


def time_embedding(embed: Callable[[list[str]], Any], texts: Sequence[str], batch_size: int) -> float:
    """Seconds `embed` takes over `texts`, one call per chunk of `batch_size` (as the dedup
    stage calls it per batch it takes), each on a worker thread as the worker embeds (torch on
    the main thread of a busy machine can be much slower). Not counted: one warm-up call."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-embed") as pool:
        pool.submit(embed, ["warm up"]).result()
        started = time.perf_counter()
        for chunk in batches(texts, batch_size):
            pool.submit(embed, chunk).result()
        return time.perf_counter() - started


def embedder_limit(turns: int, seconds: float) -> float | None:
    """Turns/s the pipeline could reach if embedding were all it did (None when unmeasured)."""
    if seconds <= 0:
        return None
    return round(turns / seconds, 2)


def candidate_summaries(events: Iterable[dict[str, Any]], users: set[str]) -> list[str]:
    """The summaries of the `candidate` events of `users` (opened events), one per event id:
    what the dedup stage embeds (one text per candidate it has not applied yet)."""
    seen: set[str] = set()
    out: list[str] = []
    for event in events:
        if event.get("kind") != "candidate" or event.get("user_id") not in users:
            continue
        if event.get("event_id") in seen or not event.get("summary"):
            continue
        seen.add(event["event_id"])
        out.append(event["summary"])
    return out


# --- the worker's resident memory ----------------------------------------------------------------
_VMRSS = re.compile(r"^VmRSS:\s+(\d+)\s*kB", re.MULTILINE)


def parse_vmrss(status: str) -> int | None:
    """Resident bytes from the text of `/proc/<pid>/status` (None when absent)."""
    found = _VMRSS.search(status)
    return int(found.group(1)) * 1024 if found else None


def metric_value(exposition: str, name: str) -> float | None:
    """The value of an unlabelled sample `name` in a Prometheus text exposition."""
    for line in exposition.splitlines():
        if line.startswith(name) and line[len(name):len(name) + 1] in (" ", "\t"):
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def process_rss(pid: int) -> int | None:
    """Resident bytes of process `pid` now (None when it is gone or /proc is not there)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            return parse_vmrss(f.read())
    except OSError:
        return None


def parse_cpu_seconds(stat: str, ticks_per_s: float) -> float | None:
    """User + system CPU seconds from the text of `/proc/<pid>/stat` (None when malformed).
    The command name (field 2) may hold spaces and parentheses: the fields counted are those
    after its last ')'."""
    fields = stat.rpartition(")")[2].split()
    try:
        return (int(fields[11]) + int(fields[12])) / ticks_per_s  # utime, stime (fields 14, 15)
    except (IndexError, ValueError):
        return None


def process_cpu_seconds(pid: int) -> float | None:
    """CPU seconds process `pid` has used (None when it is gone or /proc is not there)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return parse_cpu_seconds(f.read(), os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError):
        return None


def cpu_snapshot(pids: dict[str, int | None]) -> dict[str, float | None]:
    """CPU seconds used so far by each named process (None for one not known or gone)."""
    return {name: None if pid is None else process_cpu_seconds(pid) for name, pid in pids.items()}


def cpu_report(start: dict[str, float | None], end: dict[str, float | None], turns: int,
               seconds: float) -> dict[str, Any]:
    """Where the machine's CPU went while the turns were processed: ms of CPU per turn for
    each process, and the cores they kept busy together (of `os.cpu_count()`)."""
    used = {name: end[name] - start[name] for name in start
            if start[name] is not None and end.get(name) is not None}
    return {
        "ms_per_turn": {name: round(1000 * s / max(turns, 1), 2) for name, s in used.items()},
        "cores_busy": round(sum(used.values()) / max(seconds, 1e-9), 2) if used else None,
        "cores": os.cpu_count(),
    }


def rss_report(start: int | None, end: int | None, memories: int) -> dict[str, Any]:
    """The worker's RSS before ingest and after it, and the growth per stored memory."""
    grown = None if start is None or end is None else end - start
    return {"start": start, "after_ingest": end, "grown": grown,
            "per_memory": (round(grown / memories, 1) if grown is not None and memories > 0 else None)}
