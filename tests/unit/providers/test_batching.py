"""Several turns a call: the trigger and extraction ask about a thread's turns together, each turn
keeps its own answer, and a turn the answer misses is the rules' — counted, never dropped."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from streams.guarded.llm import GuardedLLM
from streams.providers.llm import LLMInvalidOutput, LLMServerError, Task
from streams.providers.llm.base import MAX_TOKENS, max_tokens
from streams.providers.llm.openai_provider import ResponseFormat, response_format
from streams.providers.llm.parsing import parse_items
from streams.providers.llm.prompts import system_prompt
from streams.providers.llm.schemas import ExtractionItem, TriggerItem
from streams.write.extraction import RulesExtractor
from streams.write.facts import Asked, FactPipeline
from streams.write.trigger import rules_trigger
from tests.unit.providers.conftest import HANG_GUARD_S, ManualDeadline, fallbacks, sample, settings, turn
from topics.turns import Turn

LUNA = "I adopted a dog named Luna yesterday. She is 3 years old and loves the beach!"
SAID = ["I started pottery classes last week.", "My sister Ana moved to Lisbon.", "I love hiking in the Alps."]
SMALL_TALK = ["Hey, how are you?", "Thanks, bye!"]


class Recording:
    """An `LLMProvider` answering each call with the next scripted text (or error), and keeping
    what it was asked."""

    name = "recording"
    model = "recording-1"
    sends_schema = False

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float,
                       turns: int = 1) -> str:
        self.calls.append({"task": task, "system": system, "user": json.loads(user), "turns": turns})
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer if isinstance(answer, str) else json.dumps(answer)

    async def aclose(self) -> None:
        return None


def _fact(summary: str) -> dict[str, Any]:
    return {"summary": summary, "category": "Personal", "importance": 3}


def _item(n: int, *summaries: str) -> dict[str, Any]:
    return {"n": n, "decision": "semantic" if summaries else "skip", "facts": [_fact(s) for s in summaries]}


def _turns(texts: Sequence[str], *, user: str = "u1", thread: str = "t1", first: int = 1) -> list[Turn]:
    return [turn(text, turn_id=str(first + i)).model_copy(update={"user_id": user, "thread_id": thread})
            for i, text in enumerate(texts)]


def _llm(provider: Recording, **overrides: Any) -> GuardedLLM:
    return GuardedLLM(provider, settings(**{"llm_mode": "replace", **overrides}))


def _counts(task: str) -> dict[str, float]:
    return {"ok": sample("memstream_llm_turns_total", provider="recording", task=task, outcome="ok"),
            "fallback": sample("memstream_llm_turns_total", provider="recording", task=task, outcome="fallback"),
            "invalid": fallbacks("recording", task, "invalid_output"),
            "server": fallbacks("recording", task, "server_error")}


def _delta(before: dict[str, float], task: str) -> dict[str, float]:
    return {k: v - before[k] for k, v in _counts(task).items()}


async def test_a_call_carries_the_threads_turns_and_each_keeps_its_answer() -> None:
    provider = Recording({"turns": [_item(3, "Caroline loves hiking."),
                                    _item(1, "Caroline started pottery classes."),
                                    _item(2, "Caroline's sister Ana moved to Lisbon.")]})
    turns = _turns(SAID)
    context = [turn("Hi Caroline!", speaker="Mel", turn_id="0")]
    before = _counts("extract")

    facts = await _llm(provider).extract_many([(t, [*context, *turns[:i]]) for i, t in enumerate(turns)])

    assert [[f.summary for f in turn_facts] for turn_facts in facts] == [
        ["Caroline started pottery classes."], ["Caroline's sister Ana moved to Lisbon."],
        ["Caroline loves hiking."]], "answers are matched by n, not by their order"
    (call,) = provider.calls
    assert [t["text"] for t in call["user"]["turns"]] == SAID
    assert [t["n"] for t in call["user"]["turns"]] == [1, 2, 3]
    assert call["user"]["context"] == ["Mel: Hi Caroline!"], "the context once, the asked turns not in it"
    assert call["turns"] == 3, "the provider is told how many turns (its token cap and the schema's items)"
    assert _delta(before, "extract") == {"ok": 3, "fallback": 0, "invalid": 0, "server": 0}


async def test_a_partial_answer_falls_back_for_exactly_the_turns_it_misses() -> None:
    provider = Recording({"turns": [_item(1, "Caroline started pottery classes."),
                                    {"n": 2, "decision": "semantic", "facts": []},  # invalid item
                                    _item(7, "Caroline has seven cats.")]})  # no such turn
    turns = _turns([*SAID, LUNA])
    before = _counts("extract")

    facts = await _llm(provider).extract_many([(t, ()) for t in turns])

    extractor = RulesExtractor()
    assert [f.summary for f in facts[0]] == ["Caroline started pottery classes."]
    assert facts[1] == extractor.extract(turns[1]), "an invalid item: the rules' facts"
    assert facts[2] == extractor.extract(turns[2]) and facts[3] == extractor.extract(turns[3]), \
        "a turn the answer missed: the rules' facts"
    assert all(facts[1:]), "the rules find facts in each: the fallback is seen"
    assert _delta(before, "extract") == {"ok": 1, "fallback": 3, "invalid": 3, "server": 0}


async def test_a_failed_call_falls_back_for_each_of_its_turns_counted() -> None:
    provider = Recording(LLMServerError("scripted 500"))
    turns = _turns(SAID)
    before = _counts("extract")

    facts = await _llm(provider).extract_many([(t, ()) for t in turns])

    assert facts == [RulesExtractor().extract(t) for t in turns]
    assert len(provider.calls) == 1
    assert _delta(before, "extract") == {"ok": 0, "fallback": 3, "invalid": 0, "server": 3}


async def test_users_never_share_a_call_and_batches_keep_to_their_size() -> None:
    provider = Recording({"turns": [_item(1), _item(2)]})
    items = [(t, ()) for t in [*_turns(SAID, user="u1"), *_turns(SAID[:1], user="u2"),
                               *_turns(SAID[:1], user="u1", thread="t2", first=9)]]

    await _llm(provider, llm_batch_turns=2).extract_many(items)

    asked = sorted(tuple(t["text"] for t in call["user"]["turns"]) for call in provider.calls)
    assert asked == sorted([tuple(SAID[:2]), (SAID[2],), (SAID[0],), (SAID[0],)]), \
        "u1/t1 in calls of 2 at most; u2 and u1's other thread in calls of their own"


async def test_the_trigger_asks_once_about_the_turns_the_rules_would_not_keep() -> None:
    """Hybrid: the rules keep the first turn; the model is asked about the other two in one call,
    says yes to one and answers nothing about the other, which stays the rules' no."""
    provider = Recording({"turns": [{"n": 1, "should_create": True, "type_hint": "episodic", "confidence": 0.8}]})
    turns = _turns([LUNA, *SMALL_TALK[:2]])
    assert [rules_trigger(t).should_create for t in turns] == [True, False, False]
    before = _counts("trigger")

    decisions = await GuardedLLM(provider, settings()).trigger_many([(t, ()) for t in turns])

    (call,) = provider.calls
    assert [t["text"] for t in call["user"]["turns"]] == SMALL_TALK[:2]
    assert decisions[0] == rules_trigger(turns[0])
    assert decisions[1].should_create and decisions[1].type_hint == "episodic"
    assert decisions[2] == rules_trigger(turns[2])
    assert _delta(before, "trigger") == {"ok": 1, "fallback": 1, "invalid": 1, "server": 0}


async def test_a_batched_call_has_one_budget_and_its_end_falls_back_for_every_turn() -> None:
    class Hanging(Recording):
        async def complete(self, *args: Any, **kwargs: Any) -> str:
            await asyncio.Event().wait()
            return ""

    deadline = ManualDeadline()
    llm = GuardedLLM(Hanging(), settings(llm_mode="replace", llm_extract_budget_ms=4321), deadline=deadline)
    turns = _turns(SAID)
    timeouts = fallbacks("recording", "extract", "timeout")

    pending = asyncio.ensure_future(llm.extract_many([(t, ()) for t in turns]))
    while not deadline.budgets:
        await asyncio.sleep(0)
    deadline.expire()
    facts = await asyncio.wait_for(pending, HANG_GUARD_S)

    assert deadline.budgets == [4.321], "one call, under the task's budget"
    assert facts == [RulesExtractor().extract(t) for t in turns]
    assert fallbacks("recording", "extract", "timeout") == timeouts + 3


async def test_the_fact_pipeline_asks_about_a_batch_in_two_calls() -> None:
    """Trigger for all the turns, then extraction for those that passed: two calls for three turns
    (a call a question a turn would be six)."""
    provider = Recording(
        {"turns": [{"n": i, "should_create": True, "confidence": 0.9} for i in (1, 2, 3)]},
        {"turns": [_item(1, "Caroline started pottery classes."), _item(2), _item(3)]})
    turns = _turns(SAID)

    results = await FactPipeline(settings().write).afacts_many(
        [Asked(t) for t in turns], _llm(provider))

    assert [c["task"] for c in provider.calls] == [Task.trigger, Task.extract]
    assert [f.summary for f in results[0].facts] == ["Caroline started pottery classes."]
    assert results[1].facts == [] and results[2].facts == []


def test_a_one_turn_answer_may_be_the_bare_item() -> None:
    bare = parse_items('{"should_create": true, "confidence": 0.5}', TriggerItem, 1)
    assert bare[1].should_create is True
    with pytest.raises(LLMInvalidOutput):
        parse_items('{"should_create": true, "confidence": 0.5}', TriggerItem, 2)


def test_items_are_placed_by_their_place_only_when_their_numbers_cannot_be_trusted() -> None:
    two = '{"turns": [{"decision": "skip"}, {"decision": "skip"}]}'
    assert sorted(parse_items(two, ExtractionItem, 2)) == [1, 2]
    with pytest.raises(LLMInvalidOutput):
        parse_items(two, ExtractionItem, 3)
    repeated = parse_items('{"turns": [{"n": 1, "decision": "skip"}, {"n": 1, "decision": "semantic", '
                           '"facts": [{"summary": "Mel runs.", "category": "Other", "importance": 2}]}]}',
                           ExtractionItem, 2)
    assert repeated[2].decision == "semantic", "n repeated: the second item is the second turn's"
    swapped = parse_items('{"turns": [{"n": 2, "decision": "skip"}, {"n": 1, "decision": "semantic", '
                          '"facts": [{"summary": "Mel runs.", "category": "Other", "importance": 2}]}]}',
                          ExtractionItem, 2)
    assert swapped[1].decision == "semantic", "numbers 1..n each once are the model's to order"


def test_nothing_valid_is_invalid_output_naming_fields_not_values() -> None:
    with pytest.raises(LLMInvalidOutput) as info:
        parse_items('{"turns": [{"n": 1, "should_create": "secret-xyz", "confidence": 0.1}]}', TriggerItem, 1)
    assert "should_create" in str(info.value) and "secret-xyz" not in str(info.value)


@pytest.mark.parametrize("task", [Task.trigger, Task.extract])
def test_the_prompt_leaves_the_shape_to_a_schema_sent_with_the_request(task: Task) -> None:
    told, constrained = system_prompt(task), system_prompt(task, shape=False)
    assert told.startswith(constrained) and '{"turns":' in told and '{"turns":' not in constrained
    assert '"n"' in constrained, "one item per turn, numbered, is said either way"


async def test_ingest_asks_about_a_batchs_turns_together(tmp_path, minilm_embedder) -> None:
    """A backlog of three turns of one thread: one extraction call for them (the rules keep all
    three, so hybrid asks no trigger question), and the model's fact about the second stored
    beside the rules'."""
    from streams.app.inprocess import InProcessPipeline
    from topics import names

    s = settings(table_store="memory://", data_dir=tmp_path)
    pipeline = InProcessPipeline(s, minilm_embedder)
    provider = Recording({"turns": [_item(1), _item(2, "Caroline's sister Ana is a painter."), _item(3)]})
    pipeline.ingest_stage.llm = GuardedLLM(provider, s)
    for t in _turns(SAID):
        await pipeline.send_turn(t)
    queue = pipeline.topics.queues[names.CHAT_TURNS]

    emitted = await pipeline.ingest_stage.handle_batch([queue.popleft() for _ in range(len(queue))])
    await pipeline.deliver()

    assert [c["task"] for c in provider.calls] == [Task.extract]
    assert [t["text"] for t in provider.calls[0]["user"]["turns"]] == SAID
    assert emitted[1] == 2 and emitted[0] >= 1 and emitted[2] >= 1, "the rules' facts and the model's"
    summaries = {m.summary for m in pipeline.store.user_memories("u1")}
    assert "Caroline's sister Ana is a painter." in summaries


@pytest.mark.parametrize("task", [Task.trigger, Task.extract])
def test_a_call_about_n_turns_asks_for_n_items_and_has_room_for_them(task: Task) -> None:
    """A grammar made from the schema has a small model answer every turn, not the first alone."""
    for form in (ResponseFormat.json_object, ResponseFormat.json_schema):
        fmt = response_format(form, task, 3)
        assert fmt is not None
        schema = fmt["schema"] if form is ResponseFormat.json_object else fmt["json_schema"]["schema"]
        assert (schema["properties"]["turns"]["minItems"], schema["properties"]["turns"]["maxItems"]) == (3, 3)
    assert max_tokens(task, 1) == MAX_TOKENS[task] < max_tokens(task, 3)


def test_a_skip_stores_nothing_whatever_facts_come_with_it() -> None:
    """A small model under a grammar lists facts beside its "skip": they are not validated, so
    they cannot make the answer invalid, and nothing is stored from them."""
    out = ExtractionItem.model_validate({"n": 1, "decision": "skip", "facts": [
        {"summary": "I lie.", "category": "Finance", "importance": 280}]})
    assert out.facts == []


def test_the_extraction_schema_sent_has_no_facts_on_skip_and_some_otherwise() -> None:
    from streams.providers.llm.structured import json_schema

    skip, kind = json_schema(Task.extract)["$defs"]["ExtractionItem"]["anyOf"]
    assert skip["properties"]["decision"] == {"const": "skip"} and skip["properties"]["facts"]["maxItems"] == 0
    assert "skip" not in kind["properties"]["decision"]["enum"]
    assert (kind["properties"]["facts"]["minItems"], kind["properties"]["facts"]["maxItems"]) == (1, 3)
    for answer in ({"n": 1, "decision": "skip", "facts": []},
                   {"n": 1, "decision": "semantic", "facts": [_fact("Caroline runs.")]}):
        ExtractionItem.model_validate(answer)  # each shape sent is one the validation accepts


class Gate(Recording):
    """A provider whose calls all wait until `release` is set, counting how many are in flight."""

    def __init__(self, *answers: Any) -> None:
        super().__init__(*answers)
        self.in_flight = self.most_in_flight = 0
        self.release = asyncio.Event()
        self.arrived = asyncio.Event()

    async def complete(self, task: Task, system: str, user: str, *, timeout_s: float,
                       turns: int = 1) -> str:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.arrived.set()
        try:
            await self.release.wait()
            return await super().complete(task, system, user, timeout_s=timeout_s, turns=turns)
        finally:
            self.in_flight -= 1


async def test_no_more_calls_are_in_flight_than_the_setting_allows() -> None:
    provider = Gate({"turns": [_item(1)]})
    llm = _llm(provider, llm_max_concurrent_calls=2, **{"llm_extract_budget_ms": 600_000})
    threads = [(t, ()) for i in range(5) for t in _turns(SAID[:1], thread=f"t{i}")]
    asking = asyncio.ensure_future(llm.extract_many(threads))
    await provider.arrived.wait()
    for _ in range(3):
        await asyncio.sleep(0)  # let every call that can start, start
    assert provider.in_flight == 2, "five threads, five calls: two at a time"
    provider.release.set()
    answers = await asking
    assert len(provider.calls) == 5 and len(answers) == 5 and provider.most_in_flight == 2
