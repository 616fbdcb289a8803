"""One write policy on every path that puts content in a memory (issue 48, findings 1 and 2): an
edit command (what the registry's PATCH sends), a "remember that …" turn (what the LangGraph
store sends), the episode a conversation closes, and the lifecycle's consolidated summaries and
insights. Each through the worker's own stages, in process (`InProcessPipeline`)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from streams.app.inprocess import InProcessPipeline
from streams.guarded.llm import GuardedLLM
from streams.lifecycle.consolidation import ConsolidationPass
from streams.lifecycle.insights import InsightPass
from streams.memory.commands import CommandError
from streams.observability import metrics
from streams.settings import Settings
from tests.unit.lifecycle.conftest import (  # noqa: F401 - fixtures
    USER,
    FakeMessagesAPI,
    Memories,
    Reply,
    day,
    fake_api,
    fake_llm,
    memories,
)
from topics import names
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.turns import Turn

T0 = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
LEAK = ("Ana password is hunter2; aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY; "
        "Ana has HIV.")
LUPUS = [
    "I was diagnosed with Lupus in March.",
    "My dad drove me to the clinic in Lisbon for the Lupus tests.",
    "Lupus makes me so tired some days.",
    "The rheumatologist in Lisbon says my Lupus is mild for now.",
    "Dad has been cooking for me since March because of the Lupus.",
    "I take hydroxychloroquine for the Lupus now.",
    "My Lupus flared up after the trip to Lisbon.",
    "Dad wants me to rest more because of my Lupus.",
    "I'm learning to live with Lupus, one week at a time.",
]


def turn(turn_id: str, text: str, *, user: str = "ana", speaker: str = "Ana",
         minutes: int = 0) -> Turn:
    return Turn(user_id=user, thread_id="t1", turn_id=turn_id, role="user", speaker=speaker,
                text=text, ts=T0 + timedelta(minutes=minutes))  # type: ignore[arg-type]


class Recorder:
    """What the registry's waiter is told (it answers 422 with the reason of a rejection)."""

    def __init__(self) -> None:
        self.rejections: dict[str, str] = {}
        self.applications: dict[str, list[dict[str, Any]]] = {}

    def applied(self, user_id: str, command_id: str, events: list[dict[str, Any]],
                **_: Any) -> None:
        self.applications[command_id] = events

    def rejected(self, user_id: str, command_id: str, reason: str, **_: Any) -> None:
        self.rejections[command_id] = reason


async def pipeline_with_a_memory(tmp_path, embedder) -> tuple[InProcessPipeline, str, Recorder]:
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), embedder)
    recorder = Recorder()
    pipeline.commands_stage.observer = recorder
    await pipeline.ingest([turn("1", "I love jazz music.")])
    [memory] = pipeline.store.user_memories("ana")
    assert memory.summary == "Ana loves jazz music."
    return pipeline, memory.id, recorder


async def edit(pipeline: InProcessPipeline, memory_id: str, text: str, command_id: str = "e1") -> None:
    """What `PATCH /v1/users/ana/memories/{id}` sends: an edit command on memory.commands."""
    command = Command(command_id=command_id, kind="edit", user_id="ana", memory_id=memory_id,
                      text=text, ts=T0 + timedelta(hours=1), actor="agent:planner")
    await pipeline.topics.send(names.MEMORY_COMMANDS, b"ana", command.model_dump_json().encode())
    await pipeline.deliver()


def letters(pipeline: InProcessPipeline) -> list[DeadLetter]:
    return [DeadLetter.model_validate_json(r.value or b"")
            for r in pipeline.topics.sent[names.MEMORY_COMMANDS_DLQ]]


def blocked(reason: str) -> float:
    return metrics.POLICY_BLOCKS.labels(reason=reason)._value.get()


def texts_of(pipeline: InProcessPipeline, user: str = "ana") -> list[str]:
    """Every text memstream keeps or announces for `user`: memories, candidates and events."""
    memories = [m.summary for m in pipeline.store.user_memories(user)]
    events = [e.summary or "" for e in pipeline.sent_events() if e.user_id == user]
    return memories + events


# --- finding 1: an edit passes the policy ---------------------------------------------------

async def test_an_edit_carrying_secrets_and_health_data_is_refused_and_nothing_is_stored(
        tmp_path, minilm_embedder):
    pipeline, memory_id, recorder = await pipeline_with_a_memory(tmp_path, minilm_embedder)
    before = blocked("secret")
    events_before = len(pipeline.sent_events())
    await edit(pipeline, memory_id, LEAK)
    memory = pipeline.store.state().memory(memory_id)
    assert memory.summary == "Ana loves jazz music." and memory.version == 1
    assert len(pipeline.sent_events()) == events_before, "no event announces the edit"
    assert not any("hunter2" in t or "HIV" in t or "wJalr" in t for t in texts_of(pipeline))
    [letter] = letters(pipeline)
    assert letter.reason == "inapplicable" and letter.error == "the write policy refuses the text: secret"
    assert "hunter2" not in letter.model_dump_json(), "the dead letter keeps no secret in clear"
    assert recorder.rejections == {"e1": "inapplicable: the write policy refuses the text: secret"}
    assert blocked("secret") == before + 1


@pytest.mark.parametrize(("text", "reason"), [
    ("Ana has HIV.", "sensitive_health"),
    ("My psychiatrist prescribed Zoloft.", "sensitive_health"),
    ("Ana is a devout Catholic.", "sensitive_religion"),
    ("Ana's PIN is 4821.", "password"),
    ("Jazz", "writing_too_short"),
    ("Ana loves <b>jazz</b> music.", "writing_markup"),
])
async def test_an_edit_the_policy_refuses_is_rejected_with_its_reason(tmp_path, minilm_embedder,
                                                                        text, reason):
    pipeline, memory_id, recorder = await pipeline_with_a_memory(tmp_path, minilm_embedder)
    await edit(pipeline, memory_id, text)
    assert pipeline.store.state().memory(memory_id).version == 1
    assert recorder.rejections["e1"] == f"inapplicable: the write policy refuses the text: {reason}"


async def test_an_edit_about_a_blocked_topic_is_refused(tmp_path, minilm_embedder):
    pipeline, memory_id, recorder = await pipeline_with_a_memory(tmp_path, minilm_embedder)
    block = Command(command_id="b1", kind="block_topic", user_id="ana", topic="saxophone", ts=T0)
    await pipeline.topics.send(names.MEMORY_COMMANDS, b"ana", block.model_dump_json().encode())
    await edit(pipeline, memory_id, "Ana loves jazz music and plays the saxophone.")
    assert recorder.rejections["e1"].endswith("refuses the text: blocked_topic")


async def test_an_edit_the_writing_rules_can_repair_is_stored_repaired(tmp_path, minilm_embedder):
    pipeline, memory_id, recorder = await pipeline_with_a_memory(tmp_path, minilm_embedder)
    await edit(pipeline, memory_id, "I love jazz and  blues", "e1")
    memory = pipeline.store.state().memory(memory_id)
    assert memory.summary == "Ana loves jazz and blues.", "third person, tidied"
    assert "e1" in recorder.applications and not recorder.rejections
    vector = (await pipeline.services.embed([memory.summary]))[0]
    hit = pipeline.store.index().user("ana").search(vector, 1)[0]
    assert hit[0].id == memory_id and hit[1] > 0.99, "the vector stored is the repaired text's"


async def test_a_memory_stored_on_request_may_keep_its_kind_of_sensitive_data(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    pipeline.commands_stage.observer = recorder = Recorder()
    await pipeline.ingest([turn("1", "Remember that I was diagnosed with diabetes last spring.")])
    [memory] = [m for m in pipeline.store.user_memories("ana") if "diabetes" in m.summary]
    await edit(pipeline, memory.id, "Ana was diagnosed with type 2 diabetes last spring.", "e1")
    assert pipeline.store.state().memory(memory.id).summary.startswith("Ana was diagnosed with type 2")
    await edit(pipeline, memory.id, "Ana was diagnosed with diabetes and is a devout Catholic.", "e2")
    assert recorder.rejections == {"e2": "inapplicable: the write policy refuses the text: "
                                         "sensitive_religion"}, "no kind the memory did not hold"


async def test_a_replayed_edit_answers_as_the_first_time_whatever_the_policy_says_now(
        tmp_path, minilm_embedder):
    pipeline, memory_id, recorder = await pipeline_with_a_memory(tmp_path, minilm_embedder)
    await edit(pipeline, memory_id, "Ana loves jazz and blues.", "e1")
    command = Command(command_id="e1", kind="edit", user_id="ana", memory_id=memory_id,
                      text="Ana loves jazz and blues.", ts=T0)
    state = pipeline.store.state()
    state.tables.users["ana"] = {**(state.tables.users.get("ana") or {}), "blocked_topics": ["blues"]}
    from streams.memory.commands import admit_edit
    assert admit_edit(state, command) is command, "an applied command is answered from its record"
    with pytest.raises(CommandError):
        admit_edit(state, command.model_copy(update={"command_id": "e2"}))


# --- "remember that …" (the chat command, and the LangGraph store's put) ------------------------

async def test_remember_that_with_secrets_and_health_data_stores_nothing(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    filler = ["I adopted a dog named Luna last year.", "We walk by the river in Lisbon.",
              "Luna loves the beach.", "I bought Luna a red collar.", "My sister Marta visits soon.",
              "We plan a picnic on Sunday.", "Marta loves dogs too."]
    await pipeline.ingest([turn("1", f"Remember that {LEAK}"),
                           *[turn(str(i), t, minutes=i) for i, t in enumerate(filler, 2)],
                           turn("9", "Remember that Ana has HIV.", minutes=9)])
    kept = texts_of(pipeline)
    assert not any(w in t for t in kept for w in ("hunter2", "wJalr", "password")), kept
    episodes = [m.summary for m in pipeline.store.user_memories("ana") if m.type == "episodic"]
    assert episodes and not any("HIV" in e for e in episodes), episodes
    assert any("HIV" in m.summary for m in pipeline.store.user_memories("ana")), \
        "a sensitive fact is stored when asked in so many words (and only then)"


# --- finding 2: episodes keep nothing the policy refused; medications and mental health ----------

async def test_nine_turns_about_lupus_write_no_fact_and_no_episode_naming_lupus(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await pipeline.ingest([turn(str(i), text, user="dora", speaker="Dora", minutes=i)
                           for i, text in enumerate(LUPUS, 1)])
    memories = pipeline.store.user_memories("dora")
    kept = texts_of(pipeline, "dora")
    assert not any("lupus" in t.lower() or "hydroxychloroquine" in t.lower() for t in kept), kept
    assert all(m.type != "semantic" or "Lupus" not in m.summary for m in memories)


@pytest.mark.parametrize("text", ["My psychiatrist prescribed Zoloft.", "I take Metformin twice a day.",
                                  "I've been seeing a therapist for my depression."])
async def test_medications_and_mental_health_are_not_stored(tmp_path, minilm_embedder, text):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    before = blocked("sensitive_health")
    await pipeline.ingest([turn("1", text)])
    assert pipeline.store.user_memories("ana") == []
    assert blocked("sensitive_health") > before


async def test_an_ordinary_turn_beside_a_sensitive_one_is_stored(tmp_path, minilm_embedder):
    pipeline = InProcessPipeline(Settings(table_store="memory://", data_dir=tmp_path), minilm_embedder)
    await pipeline.ingest([turn("1", "I take Metformin twice a day."),
                           turn("2", "I work at a pharmacy in Porto.", minutes=1)])
    assert [m.summary for m in pipeline.store.user_memories("ana")] == ["Ana works at a pharmacy in Porto."]


# --- the lifecycle: consolidated summaries and insights ------------------------------------------

SENSITIVE_EPISODES = [
    (1, "On 2024-05-01 (W18, 2024) we discussed Ana's Lupus diagnosis. Approach: Ana was diagnosed "
        "with Lupus and booked a rheumatologist."),
    (2, "On 2024-05-02 (W18, 2024) we discussed Ana's Lupus treatment. Approach: Ana takes "
        "hydroxychloroquine for Lupus."),
]


async def test_a_consolidated_summary_of_refused_content_is_refused(memories: Memories):
    ids = [memories.add(text, day(d), thread=f"s{d}").id for d, text in SENSITIVE_EPISODES]
    before = blocked("sensitive_health")
    events = await ConsolidationPass(embed=memories.embed)(memories.state, USER, day(5))
    assert events == [], "no consolidated memory is made of them"
    assert all(memories.state.memory(i).is_visible for i in ids), "the episodes stay as they were"
    assert blocked("sensitive_health") > before


async def test_an_llm_consolidation_the_policy_refuses_falls_back_to_the_rules(
        memories: Memories, fake_llm: GuardedLLM, fake_api: FakeMessagesAPI):
    trip = [(1, "On 2024-05-01 (W18, 2024) we discussed planning a trip to Lisbon. Approach: "
                "compared flights and picked dates in June."),
            (2, "On 2024-05-02 (W18, 2024) we discussed the Lisbon trip budget. Approach: listed "
                "hotel options in Alfama.")]
    for d, text in trip:
        memories.add(text, day(d), thread=f"s{d}")
    fake_api.script(Reply.json({"summary": "Ana planned a Lisbon trip; Ana takes Zoloft for her "
                                           "depression and packed it."}))
    events = await ConsolidationPass(llm=fake_llm, embed=memories.embed)(memories.state, USER, day(5))
    [made] = [e for e in events if e.kind == "consolidated"]
    summary = memories.state.memory(made.memory_id).summary
    assert made.meta["writer"] == "rules" and "Zoloft" not in summary and "Alfama" in summary


async def test_an_insight_the_policy_refuses_is_not_stored(
        memories: Memories, fake_llm: GuardedLLM, fake_api: FakeMessagesAPI):
    memories.add("On 2024-05-01 (W18, 2024) we discussed Ana's job offer. Approach: weighed "
                 "salary against commute.", day(1))
    memories.add("Ana works as a nurse in Lisbon.", day(2), type="semantic")
    fake_api.script(Reply.json({"insights": [
        {"summary": "Ana copes with stress through her bipolar disorder medication.", "tags": [],
         "importance": 2},
        {"summary": "Ana trusts advice more when the trade-offs are spelled out.", "tags": [],
         "importance": 2}]}))
    events = await InsightPass(fake_llm, embed=memories.embed)(memories.state, USER, day(3))
    stored = [memories.state.memory(e.memory_id).summary for e in events]
    assert stored == ["Ana trusts advice more when the trade-offs are spelled out."]
    sent = json.loads(fake_api.requests[0]["body"]["messages"][0]["content"])
    assert "activity" in sent


def test_every_path_uses_one_policy_object():
    """The edit path and the lifecycle fall back to the policy of the default settings."""
    from streams.memory.commands import DEFAULT_POLICY
    from streams.write.write_policy import WritePolicy
    from streams.write.facts import FactPipeline
    from streams.settings import WriteSettings
    assert DEFAULT_POLICY == WritePolicy.of(WriteSettings()) == FactPipeline(WriteSettings()).policy
    assert ConsolidationPass().policy == InsightPass(None).policy == DEFAULT_POLICY
