"""A worker's event loop profiled by its CPU clock, switched on and off by signals.

`python -m streams.tools.cpu_profile OUT MODULE [ARG…]` runs `MODULE` as `__main__` (e.g.
`streams worker`) with a `cProfile` profiler whose clock is the main thread's CPU time
(`time.thread_time`): it counts what each function costs the thread itself, not the time the
thread waited for the GIL or for a core. Sampled profiles and wall-clock `cProfile` misled here
(docs/capacity.md): a C call that lets the GIL go (zstd, numpy's sorts, BLAS) looked 5-10 times
its cost, because the event loop then waited for the embedder's threads.

`START_SIGNAL` starts a fresh profile; `STOP_SIGNAL` stops it and writes it to OUT (`pstats`
format), so a bench profiles only its drain (`bench locomo --profile-cpu DIR`). The profiler's
own cost about triples the thread's CPU: read the shares, not the milliseconds.
"""
from __future__ import annotations

import cProfile
import os
import pstats
import runpy
import signal
import sys
import time
from pathlib import Path
from typing import Any

START_SIGNAL = signal.SIGRTMIN + 1
"""Start a fresh profile (mode's workers handle SIGUSR1 themselves: real-time signals are free)."""
STOP_SIGNAL = signal.SIGRTMIN + 2
"""Stop the profile and write it."""
PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
"""The checkout this module is in: its files (outside an environment's site-packages) are the
project's own."""


def profile_file(directory: Path, worker: int, workers: int) -> Path:
    """Where worker `worker` (from 0) of a stack of `workers` writes its profile: `worker.prof`
    when it is the only one, else `worker-i.prof` (named as the workers' data and logs are)."""
    return directory / ("worker.prof" if workers <= 1 else f"worker-{worker}.prof")


class SignalledProfile:
    """A profile of this process's main thread between `START_SIGNAL` and `STOP_SIGNAL`."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._profile: cProfile.Profile | None = None

    def install(self) -> None:
        signal.signal(START_SIGNAL, self.start)
        signal.signal(STOP_SIGNAL, self.stop)

    def start(self, *_: Any) -> None:
        if self._profile is not None:
            self._profile.disable()
        self._profile = cProfile.Profile(time.thread_time)
        self._profile.enable()

    def stop(self, *_: Any) -> None:
        """Stop and write the profile to `out` (whole or not at all: written beside, renamed)."""
        profile, self._profile = self._profile, None
        if profile is None:
            return
        profile.disable()
        partial = self.out.with_name(self.out.name + ".partial")
        profile.dump_stats(str(partial))
        os.replace(partial, self.out)


def top_functions(path: Path, count: int = 20) -> dict[str, list[dict[str, Any]]]:
    """The functions of a profile written by `SignalledProfile`, as shares of its total CPU:
    `own` (the function's own time, any code), and `with_callees` (the project's functions,
    their callees included), the `count` largest of each."""
    stats: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]  # pstats keeps its table here
    total = sum(own for _, _, own, _, _ in stats.values()) or 1.0

    def name(key: tuple[str, int, str]) -> str:
        file, line, function = key
        if _is_project_file(file):
            file = file[len(PROJECT_ROOT) + 1:]
        elif "site-packages/" in file:
            file = file.split("site-packages/", 1)[1]
        return f"{file}:{line}({function})"

    def listed(pairs: list[tuple[tuple[str, int, str], float]]) -> list[dict[str, Any]]:
        ranked = sorted(pairs, key=lambda pair: -pair[1])[:count]
        return [{"function": name(key), "share": round(seconds / total, 4)} for key, seconds in ranked]

    own = [(key, value[2]) for key, value in stats.items()]
    ours = [(key, value[3]) for key, value in stats.items() if _is_project_file(key[0])]
    return {"own": listed(own), "with_callees": listed(ours)}


def _is_project_file(file: str) -> bool:
    return file.startswith(PROJECT_ROOT + os.sep) and "site-packages" not in file


def main(argv: list[str]) -> None:
    """`OUT MODULE [ARG…]`: run MODULE as `__main__` under a `SignalledProfile` writing OUT."""
    if len(argv) < 2:
        raise SystemExit("usage: python -m streams.tools.cpu_profile OUT MODULE [ARG…]")
    out, module, *args = argv
    SignalledProfile(Path(out)).install()
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
