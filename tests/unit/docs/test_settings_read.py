"""Every setting is read by some code (issue 21): a field nothing reads is a documented knob
that does nothing (as DECAY_DAYS, EPISODIC_NOVELTY_MIN and MEMORY_CONTEXT_TOPN were)."""
from __future__ import annotations

import re
from pathlib import Path

from streams.settings import sections

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ("streams", "agents", "sinks", "topics")
SETTINGS = Path("streams/settings")


def test_every_setting_is_read_somewhere():
    code = "\n".join(path.read_text(encoding="utf-8")
                     for top in SOURCES for path in (ROOT / top).rglob("*.py")
                     if SETTINGS not in path.relative_to(ROOT).parents)
    # A field read only through a property of its section (e.g. `broker_url`) counts as read.
    code += "\n" + "\n".join(read for path in (ROOT / SETTINGS).glob("*.py")
                             for read in re.findall(r"self\.\w+", path.read_text(encoding="utf-8")))
    unread = [name for model in sections().values() for name in model.model_fields
              if not re.search(rf"\.{name}\b|[\"']{name}[\"']", code)]
    assert unread == [], f"settings no code reads: {unread}"
