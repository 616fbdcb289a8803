"""A worker profiled by its CPU clock between two signals (`streams/tools/cpu_profile.py`) and the
bench's side of it (`benchmarks/cpu_profiles.py`)."""
from __future__ import annotations

import cProfile
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pstats
import pytest

from benchmarks.cpu_profiles import ProfileNotWritten, stop_profiles
from streams.tools.cpu_profile import START_SIGNAL, STOP_SIGNAL, top_functions

PROFILED_MODULE = textwrap.dedent("""
    import os
    from streams.tools.cpu_profile import START_SIGNAL, STOP_SIGNAL

    def before():
        return sum(range(20000))

    def hot():
        return sum(i * i for i in range(200000))

    def after():
        return sum(range(20000))

    before()
    os.kill(os.getpid(), START_SIGNAL)
    hot()
    os.kill(os.getpid(), STOP_SIGNAL)
    after()
""")


def test_only_what_runs_between_the_signals_is_profiled(tmp_path: Path) -> None:
    (tmp_path / "profiled_target.py").write_text(PROFILED_MODULE)
    out = tmp_path / "worker.prof"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]))
    subprocess.run([sys.executable, "-m", "streams.tools.cpu_profile", str(out), "profiled_target"],
                   env=env, check=True, timeout=120)
    functions = {key[2] for key in pstats.Stats(str(out)).stats}  # type: ignore[attr-defined]
    assert "hot" in functions
    assert "before" not in functions and "after" not in functions
    top = top_functions(out)
    assert any("hot" in entry["function"] for entry in top["own"])
    assert 0 < sum(entry["share"] for entry in top["own"]) <= 1.0001


@pytest.fixture()
def stop_writes_a_profile(tmp_path: Path) -> Iterator[Path]:
    """This process stands in for a worker: told to stop, it writes `worker.prof`."""
    out = tmp_path / "worker.prof"
    profile = tmp_path / "source.prof"
    source = cProfile.Profile()
    source.enable()
    sorted(range(1000), key=lambda i: -i)
    source.disable()
    source.dump_stats(str(profile))

    def write(*_: object) -> None:
        out.write_bytes(profile.read_bytes())
    previous = signal.signal(STOP_SIGNAL, write)
    try:
        yield tmp_path
    finally:
        signal.signal(STOP_SIGNAL, previous)


def test_the_bench_waits_for_the_worker_s_profile_and_reports_it(stop_writes_a_profile: Path) -> None:
    (stop_writes_a_profile / "worker.prof").write_bytes(b"stale")  # a previous run's
    report = stop_profiles({"worker-0": os.getpid(), "broker": None}, stop_writes_a_profile)
    assert report["files"] == [str(stop_writes_a_profile / "worker.prof")]
    assert any("sorted" in entry["function"] for entry in report["top"]["own"])


def test_a_profile_that_never_comes_is_a_named_error(tmp_path: Path) -> None:
    now = [0.0]

    def pause(seconds: float) -> None:
        now[0] += seconds
    previous = signal.signal(STOP_SIGNAL, lambda *_: None)  # told to stop, writes nothing
    try:
        with pytest.raises(ProfileNotWritten, match="worker.prof"):
            stop_profiles({"worker-0": os.getpid(), "worker-1": None}, tmp_path, timeout=5.0,
                          clock=lambda: now[0], pause=pause)
    finally:
        signal.signal(STOP_SIGNAL, previous)
    assert now[0] > 5.0


def test_the_start_signal_is_not_one_a_worker_handles_itself() -> None:
    """mode's workers take SIGUSR1 and SIGUSR2 for themselves; the profile's signals are others."""
    assert {START_SIGNAL, STOP_SIGNAL}.isdisjoint({signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT,
                                                   signal.SIGTERM})


def test_the_report_table_names_the_functions_and_files(stop_writes_a_profile: Path) -> None:
    from rich.console import Console

    from benchmarks.cpu_profiles import render_cpu_profile

    report = stop_profiles({"worker-0": os.getpid()}, stop_writes_a_profile)
    report["top"]["with_callees"] = [{"function": "streams/pipeline/dedup.py:77(handle_batch)", "share": 0.52}]
    console = Console(record=True, width=200)
    render_cpu_profile(report, console)
    text = console.export_text()
    assert "dedup.py:77(handle_batch)" in text and "52.0 %" in text
    assert str(stop_writes_a_profile / "worker.prof") in text
