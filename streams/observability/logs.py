"""Logging failures without content: an exception's message can quote the input that caused it
(a user's text, a secret), so logs name the exception's type and where it was raised, never
its message or its locals."""
from __future__ import annotations

import traceback
from pathlib import Path


def describe_failure(exc: BaseException) -> str:
    """`Type at file.py:line in function` for the innermost frame of `exc`'s traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    frame = frames[-1]
    return f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno} in {frame.name}"
