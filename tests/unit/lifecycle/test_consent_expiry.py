"""A consent proposal of a user who went quiet expires on the partition's event-time watermark
(the lifecycle runner in the in-process pipeline)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from streams.settings import Settings
from streams.memory.consent import pending_proposals
from streams.app.inprocess import InProcessPipeline
from topics.turns import Turn

T0 = datetime(2024, 1, 1, 9, tzinfo=timezone.utc)


def turn(user: str, turn_id: str, text: str, days: float) -> Turn:
    return Turn(user_id=user, thread_id="t1", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts=T0 + timedelta(days=days))  # type: ignore[arg-type]


async def test_an_idle_users_proposal_expires_on_the_watermark(tmp_path, minilm_embedder):
    p = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await p.ingest([turn("quiet", "1", "I live in Lisbon.", 0),
                    turn("quiet", "2", "My friend says I live in Berlin now.", 0.01)])
    assert len(pending_proposals(p.store.state(), "quiet", None)) == 1
    await p.ingest([turn("busy", "1", "I drive a red Toyota.", 3),
                    turn("busy", "2", "My sister Marta lives in Porto.", 9)])
    state = p.store.state()
    assert pending_proposals(state, "quiet", None) == []
    verbs = [e["verb"] for entries in state.tables.audit.values() for e in entries
             if e["verb"].startswith("CONSENT_")]
    assert verbs.count("CONSENT_EXPIRED") == 1
    assert [m.summary for m in p.store.user_memories("quiet") if m.state == "active"] == [
        "Ana lives in Lisbon."]
