"""Every exception class memstream defines derives from `MemstreamError` (issue 21), so a caller
can catch all of memstream's own errors at once; those that were a ValueError, RuntimeError …
still are (a second base), so no existing handler changes."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

from streams.errors import MemstreamError

PACKAGES = ("streams", "sinks", "agents", "topics", "benchmarks")
RUN_ELSEWHERE = ("__main__", "benchmarks.mem0_runner")
"""Not imported here: the CLI's entry runs on import; mem0's runner runs in mem0's own venv,
without memstream installed."""


def defined_exceptions() -> list[type[BaseException]]:
    found = []
    for top in PACKAGES:
        for info in pkgutil.walk_packages(importlib.import_module(top).__path__, top + "."):
            if info.name.endswith(RUN_ELSEWHERE):
                continue
            module = importlib.import_module(info.name)
            found += [obj for obj in vars(module).values()
                      if inspect.isclass(obj) and issubclass(obj, BaseException)
                      and not issubclass(obj, Warning) and obj.__module__ == module.__name__]
    return found


def test_every_exception_memstream_defines_is_a_memstream_error():
    exceptions = defined_exceptions()
    assert len(exceptions) > 50
    assert [e.__qualname__ for e in exceptions if not issubclass(e, MemstreamError)] == []


def test_the_builtin_bases_they_had_are_kept():
    from sinks.s3vectors_layout import LayoutError
    from streams.pipeline.commands import InvalidCommand
    from streams.providers.embedders.base import EmbedderError

    assert issubclass(LayoutError, ValueError) and issubclass(InvalidCommand, ValueError)
    assert issubclass(EmbedderError, RuntimeError)
