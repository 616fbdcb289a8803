"""The topics and stages tables of docs/architecture.md, made from the declaration
(`streams.app.topology`):

    python -m streams.app.topology_docs            # rewrite the tables in docs/architecture.md

Each table sits between a begin and an end marker (`BEGIN`, `END`); the rest of the page is
written by hand. tests/unit/docs/test_topology_docs.py fails when the checked-in tables are not
what this makes now.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from streams.app.topology import STAGES, TOPICS, Stage, Topic
from streams.errors import MemstreamError

ARCHITECTURE = Path(__file__).parents[2] / "docs" / "architecture.md"
BEGIN = "<!-- topology:{name} begin: made by `python -m streams.app.topology_docs` from streams/app/topology.py -->"
END = "<!-- topology:{name} end -->"


class MissingTableMarkers(MemstreamError):
    """The page has no begin and end markers for a generated table."""


def _code(name: str) -> str:
    return f"`{name}`"


def _joined(parts: list[str]) -> str:
    return ", ".join(part for part in parts if part)


def topic_row(topic: Topic) -> str:
    """One topic: who writes it (stages, their refused records, others), who reads it, its value."""
    writers = [stage.name for stage in STAGES if topic.name in stage.writes]
    writers += [f"{stage.name} (records it refuses)" for stage in STAGES
                if stage.dead_letters == topic.name]
    readers = [stage.name for stage in STAGES if stage.reads == topic.name]
    name = _code(topic.name) + (" (internal)" if topic.internal else "")
    return (f"| {name} | {_joined([*writers, topic.written_by])} | "
            f"{_joined([*readers, topic.read_by])} | {topic.value} |")


def topics_table() -> str:
    lines = ["| topic | written by | read by | value |", "|---|---|---|---|"]
    lines += [topic_row(topic) for topic in TOPICS]
    return "\n".join(lines)


def stage_row(stage: Stage) -> str:
    """One stage: its agent, input (and batching), outputs, dead-letter topic."""
    name = f"{stage.name} (`{stage.agent}`)" + (f", {stage.when}" if stage.when else "")
    reads = _code(stage.reads)
    if stage.batching is not None:
        reads += f", in batches (`{stage.batching.setting}`)"
    writes = _joined([*map(_code, stage.writes), stage.also])
    letters = (f"{_code(stage.dead_letters)} (`{stage.letter.__name__}`)"
               if stage.dead_letters is not None else "none")
    return f"| {name} | {reads} | {writes} | {letters} |"


def stages_table() -> str:
    lines = ["| stage | reads | writes | dead letters to |", "|---|---|---|---|"]
    lines += [stage_row(stage) for stage in STAGES]
    return "\n".join(lines)


TABLES = {"topics": topics_table, "stages": stages_table}


def updated(page: str) -> str:
    """`page` with each generated table made anew between its markers."""
    for name, table in TABLES.items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        pattern = re.compile(re.escape(begin) + r"\n.*?\n" + re.escape(end), re.DOTALL)
        if not pattern.search(page):
            raise MissingTableMarkers(f"no {begin!r} ... {end!r} in the page")
        page = pattern.sub(lambda _: f"{begin}\n{table()}\n{end}", page, count=1)
    return page


def main() -> None:
    ARCHITECTURE.write_text(updated(ARCHITECTURE.read_text(encoding="utf-8")), encoding="utf-8")
    sys.stdout.write(f"wrote the topology tables of {ARCHITECTURE}\n")


if __name__ == "__main__":
    main()
