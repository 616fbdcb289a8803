"""The memory delta header (seed 001 §1): what changed since a revision, in at most 3 bullets."""
from __future__ import annotations

from typing import Any, Sequence

from topics.events import EVENT_KINDS

MAX_BULLETS = 3


def render_delta(since_rev: int, changes: Sequence[dict[str, Any]]) -> str:
    """`changes` newest first (as `MemoryState.changes_since` returns them); "" when none."""
    if not changes:
        return ""
    lines = [f"Memory updates since rev {since_rev}:"]
    for change in changes[:MAX_BULLETS]:
        sign = EVENT_KINDS[change["kind"]].delta_sign  # each kind's sign: topics.events
        if change["kind"] == "purged":  # a purged memory left no content to show
            lines.append(f"- {sign}: a memory forgotten earlier is gone for good")
            continue
        lines.append(f"- {sign}: [{change['category']}] {change['summary']} (imp={change['importance']})")
    return "\n".join(lines)
