"""`bench locomo --profile-cpu DIR`: each worker's event loop profiled by its CPU clock over
the drain only (`streams.tools.cpu_profile`), and the report's `cpu_profile`."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from streams.errors import MemstreamError
from streams.tools.cpu_profile import START_SIGNAL, STOP_SIGNAL, profile_file, top_functions

WRITE_TIMEOUT_SECONDS = 60.0
"""How long a worker may take to write its profile once told to stop."""


class ProfileNotWritten(MemstreamError, TimeoutError):
    """A worker told to stop its profile wrote none in time (it died, or is stuck)."""


def signal_workers(pids: dict[str, int | None], signal_number: int) -> None:
    """Send `signal_number` to the workers (`worker-…`) among `pids` that were started here."""
    for name, pid in pids.items():
        if name.startswith("worker") and pid is not None:
            os.kill(pid, signal_number)


def start_profiles(pids: dict[str, int | None]) -> None:
    signal_workers(pids, START_SIGNAL)


def stop_profiles(pids: dict[str, int | None], profile_dir: Path, *,
                  timeout: float = WRITE_TIMEOUT_SECONDS,
                  clock: Callable[[], float] = time.monotonic,
                  pause: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Tell the workers to stop and write their profiles, wait for the files, and report them:
    each file's path and the first worker's largest functions (`top_functions`). Raises
    `ProfileNotWritten` when a file is still missing after `timeout` seconds."""
    for stale in profile_dir.glob("worker*.prof"):
        stale.unlink()
    started = sum(1 for name, pid in pids.items() if name.startswith("worker") and pid is not None)
    expected = [profile_file(profile_dir, i, started) for i in range(started)]
    signal_workers(pids, STOP_SIGNAL)
    deadline = clock() + timeout
    while missing := [path for path in expected if not path.exists()]:
        if clock() > deadline:
            raise ProfileNotWritten(f"no CPU profile written at {', '.join(map(str, missing))}")
        pause(0.1)  # a file another process writes: there is no event to await
    return {"files": [str(path) for path in expected],
            "top": top_functions(expected[0]) if expected else None}


def render_cpu_profile(profile: dict[str, Any], console: Console, rows: int = 15) -> None:
    """The project's functions that cost the first worker's event loop most while the turns
    drained, callees included, and where the profiles are."""
    table = Table(title="event loop CPU by function, callees included (worker 0, the drain)")
    table.add_column("function")
    table.add_column("share", justify="right")
    for entry in (profile.get("top") or {}).get("with_callees", [])[:rows]:
        table.add_row(entry["function"], f"{100 * entry['share']:.1f} %")
    console.print(table)
    console.print("profiles (read with `python -m pstats FILE`): " + ", ".join(profile["files"]))
