"""Every checker suppression in the code says what it silences and why (issue 21: "the `noqa` and
`type: ignore` comments left are each justified").

In `streams/`, `agents/`, `sinks/`, `topics/` and `benchmarks/` (the tests are exempt):
- a `type: ignore` names its error codes and gives a reason in a comment after it:
  `# type: ignore[attr-defined]  # why`;
- a `noqa` names its rules and gives a reason after a dash: `# noqa: BLE001 - why`.

A bare one silences more than it means to (any error on the line, today's and tomorrow's) and
leaves the next reader to guess whether it may go. Remove it by typing the code properly where
possible; otherwise say why it stays.
"""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).parents[2]
CHECKED = ("streams", "agents", "sinks", "topics", "benchmarks")

_TYPE_IGNORE = re.compile(r"type:\s*ignore")
_JUSTIFIED_TYPE_IGNORE = re.compile(r"type: ignore\[[a-z-]+(?:, *[a-z-]+)*\] *# *\S")
_NOQA = re.compile(r"\bnoqa\b", re.IGNORECASE)
_JUSTIFIED_NOQA = re.compile(r"noqa: [A-Z]+[0-9]+(?:, *[A-Z]+[0-9]+)* +- +\S")


def bare_suppressions(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each `type: ignore` or `noqa` in `source`'s comments (not its strings)
    without its codes and a reason."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        text = token.string
        bare = any(not _JUSTIFIED_TYPE_IGNORE.match(text, m.start()) for m in _TYPE_IGNORE.finditer(text))
        bare |= any(not _JUSTIFIED_NOQA.match(text, m.start()) for m in _NOQA.finditer(text))
        if bare:
            found.append((token.start[0], text))
    return found


def test_every_suppression_names_what_it_silences_and_why():
    found = [f"  {path.relative_to(ROOT)}:{line}: {comment}"
             for top in CHECKED for path in sorted((ROOT / top).rglob("*.py"))
             for line, comment in bare_suppressions(path.read_text(encoding="utf-8"))]
    assert not found, (
        "suppressions without their codes and a reason (`# type: ignore[code]  # why`, "
        "`# noqa: RULE - why`; better still, type the code so none is needed):\n" + "\n".join(found))


def test_a_bare_suppression_is_caught_and_a_justified_one_is_not():
    source = "\n".join([
        "a = f()  # type: ignore",
        "b = f()  # type: ignore[arg-type]",
        "c = f()  # type: ignore[arg-type]  #",
        "d = f()  # noqa",
        "e = f()  # noqa: BLE001",
        "g = f()  # NOQA: F401 why",
        "h = f()  # type: ignore[misc]  # noqa",
        "ok = f()  # type: ignore[attr-defined, misc]  # Faust's App declares no such attribute",
        "ok = f()  # noqa: BLE001 - one bad record never stops the stream",
        "ok = f()  # type: ignore[misc]  # why  # noqa: F401 - re-exported",
        'ok = "# type: ignore, # noqa: in a string is no suppression"',
    ]) + "\n"
    assert [line for line, _ in bare_suppressions(source)] == [1, 2, 3, 4, 5, 6, 7]
