"""Every setting is read by some code (issue 21): a field nothing reads is a documented knob
that does nothing (as DECAY_DAYS, EPISODIC_NOVELTY_MIN and MEMORY_CONTEXT_TOPN were)."""
from __future__ import annotations

import re
from pathlib import Path

from streams.app.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ("streams", "agents", "sinks", "topics")
NOT_READERS = {Path("streams/app/settings.py"), Path("streams/app/settings_docs.py")}


def test_every_setting_is_read_somewhere():
    code = "\n".join(path.read_text(encoding="utf-8")
                     for top in SOURCES for path in (ROOT / top).rglob("*.py")
                     if path.relative_to(ROOT) not in NOT_READERS)
    # A field read only through a property of Settings (e.g. `broker_url`) counts as read.
    code += "\n" + "\n".join(re.findall(r"self\.\w+", (ROOT / "streams/app/settings.py").read_text()))
    unread = [name for name in Settings.model_fields
              if not re.search(rf"\.{name}\b|[\"']{name}[\"']", code)]
    assert unread == [], f"settings no code reads: {unread}"
