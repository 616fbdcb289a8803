"""What the worst inputs cost: event-loop (wall) time of each input path on adversarial text.

`python -m benchmarks.adversarial_cost` prints, for each class of hostile text (long runs of
the pieces a pattern can loop over: backticks after a keyword, spaces, keywords glued together,
"sk-sk-…", many names, …), the time one call takes on each input path: a chat turn at the turn
limit (8,000 characters: the rules trigger, the extractor and the secret policy, then the
thread buffer's redaction), a query of the same size (recall intent and time window) and a dead
letter at `DLQ_MAX_RAW_BYTES` (256 KiB: the secret scan, then the redaction). Every path must
stay linear in the length of its input (issue 24): a class whose time grows with the square of
its length shows as seconds here. `--chars` sets the sizes, `--paths` and `--classes` narrow
the run, `--limit` stops a call after that many seconds (printed as `>limit`).
"""
from __future__ import annotations

import argparse
import itertools
import json
import signal
import string
import time
from collections.abc import Callable
from datetime import datetime, timezone
from types import FrameType

from streams.errors import MemstreamError
from streams.settings import WriteSettings
from streams.pipeline.dead_letters import kept_bytes
from streams.language.dates import time_window
from streams.read.recall_intent import has_recall_intent
from streams.write import policy
from streams.write.facts import FactPipeline
from topics.turns import Turn

TURN_CHARS = 8000
DEAD_LETTER_BYTES = 262144
_TS = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)


def _repeat(piece: str, size: int, head: str = "", tail: str = "") -> str:
    """`head`, then `piece` over and over, then `tail`: `size` characters in all."""
    body = piece * ((size - len(head) - len(tail)) // len(piece) + 1)
    return head + body[: max(0, size - len(head) - len(tail))] + tail


def _names(size: int) -> str:
    """"I met Aaaa, Aaab, …": as many distinct capitalised names as fit."""
    names = ("A" + "".join(t) for t in itertools.product(string.ascii_lowercase, repeat=3))
    return ("I met " + ", ".join(itertools.islice(names, size // 6 + 1)))[:size]


CLASSES: dict[str, Callable[[int], str]] = {
    "benign prose": lambda n: _repeat("I love hiking with my dog Max on weekends. ", n),
    "secret `a`a`a": lambda n: _repeat("`a", n, "secret "),
    "api_keyapi_key…": lambda n: _repeat("api_key", n),
    "secret`secret`…": lambda n: _repeat("secret`", n),
    "`a`a… then '==pwd": lambda n: _repeat("`a", n, "x ", "'==pwd"),
    "spaces": lambda n: _repeat(" ", n, "I love", "it."),
    "no-break spaces": lambda n: _repeat("\xa0", n, "I love", "it."),
    "line breaks": lambda n: _repeat("\n", n, "I love", "it."),
    "comma runs (command)": lambda n: _repeat(", ", n, "remember that I love it"),
    "ok ok ok": lambda n: _repeat("ok ", n),
    "distinct names": _names,
    "sk-sk-sk-": lambda n: _repeat("sk-", n),
    "////… (one line)": lambda n: _repeat("/", n),
    "eyJeyJ…": lambda n: _repeat("eyJ", n),
    "AC… key run": lambda n: _repeat("AC" + "a" * 32, n),
    "PEM header": lambda n: _repeat("PRIVATE KEY ", n, "-----BEGIN "),
    "[shares an image:": lambda n: _repeat("[shares an image: ", n),
    "first-then runs": lambda n: _repeat("first, ", n),
    "a dog named Max…": lambda n: _repeat("a dog named Max ", n, "I have "),
    "1-comma runs (fact)": lambda n: _repeat("1,", n, "I paid ", " dollars."),
    "… runs (fact)": lambda n: _repeat("…", n, "I love my dog Max ", " today."),
}
"""Hostile text by class, built to a given length."""


def _turn(text: str) -> None:
    """What ingest does with a chat turn: facts by rules, then its redacted copy in the buffer."""
    turn = Turn(user_id="u1", thread_id="t1", turn_id="1", role="user", text=text, ts=_TS)
    _pipeline().facts(turn)
    policy.redact(text)


def _query(text: str) -> None:
    has_recall_intent(text)
    time_window(text, _TS)


def _dead_letter(text: str) -> None:
    kept_bytes(text.encode("utf-8"), DEAD_LETTER_BYTES)


PATHS: dict[str, tuple[Callable[[str], None], int]] = {
    "turn": (_turn, TURN_CHARS),
    "query": (_query, TURN_CHARS),
    "dead_letter": (_dead_letter, DEAD_LETTER_BYTES),
}
"""Input path → (one call, the largest input it is given)."""

_PIPELINE: list[FactPipeline] = []


def _pipeline() -> FactPipeline:
    if not _PIPELINE:
        _PIPELINE.append(FactPipeline(WriteSettings()))
    return _PIPELINE[0]


class _TooLong(MemstreamError):
    """A call ran past `--limit`."""


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise _TooLong


def timed(call: Callable[[str], None], text: str, limit: int) -> float | None:
    """Wall seconds of one call, None when it ran past `limit` seconds (POSIX alarm)."""
    previous = signal.signal(signal.SIGALRM, _stop)
    signal.alarm(limit)
    started = time.perf_counter()
    try:
        call(text)
        return time.perf_counter() - started
    except _TooLong:
        return None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run(classes: list[str], paths: list[str], sizes: list[int] | None,
        limit: int) -> list[dict[str, object]]:
    """One row per (class, path, size): milliseconds, or None past the limit."""
    _turn("I love hiking. My password is hunter2.")  # imports and caches before timing
    _query("what did we do last week")
    rows: list[dict[str, object]] = []
    for name in classes:
        for path in paths:
            call, largest = PATHS[path]
            for size in sizes or [largest]:
                seconds = timed(call, CLASSES[name](size), limit)
                rows.append({"class": name, "path": path, "chars": size,
                             "ms": None if seconds is None else round(1000 * seconds, 1)})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", help="comma-separated sizes (default: each path's limit)")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--classes", default=",".join(CLASSES), help="comma-separated names")
    parser.add_argument("--limit", type=int, default=120, help="seconds before a call is cut")
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.chars.split(",")] if args.chars else None
    for row in run(args.classes.split(","), args.paths.split(","), sizes, args.limit):
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            ms = f">{args.limit}s" if row["ms"] is None else f"{row['ms']} ms"
            print(f"{row['class']:22} {row['path']:12} {row['chars']:>7} {ms:>12}", flush=True)


if __name__ == "__main__":
    main()
