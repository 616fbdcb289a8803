"""The topology is declared once (streams/app/topology.py): the topics created, the dead-letter
map, the worker's agents and the in-process runner all follow the declaration."""
from __future__ import annotations

from pathlib import Path

import agents
from streams.app import topology
from streams.settings import Settings
from streams.app.topology import ALL_TOPICS, DLQ_OF, IN_PROCESS, STAGES, TOPICS
from streams.app.inprocess import LocalTopics
from streams.worker import build_worker
from topics import names


def declared_names() -> set[str]:
    return {value for key, value in vars(names).items() if key.isupper() and isinstance(value, str)}


def test_every_topic_name_is_declared_once_and_created():
    assert sorted(ALL_TOPICS) == sorted(declared_names())
    assert len(ALL_TOPICS) == len(set(ALL_TOPICS)) == len(TOPICS)


def test_every_stage_reads_writes_and_dead_letters_declared_topics():
    for stage in STAGES:
        assert stage.reads in ALL_TOPICS, stage.name
        assert set(stage.writes) <= set(ALL_TOPICS), stage.name
        assert stage.dead_letters is None or stage.dead_letters in ALL_TOPICS, stage.name
        assert (stage.batching is None) == (stage.name in ("commands", "sinks")), stage.name
        assert Path(stage.agent).exists(), stage.agent


def test_the_dead_letter_map_is_that_of_the_stages_refusing_dead_letters():
    assert DLQ_OF == {names.CHAT_TURNS: names.CHAT_TURNS_DLQ,
                      names.MEMORY_CANDIDATES: names.MEMORY_CANDIDATES_DLQ,
                      names.MEMORY_COMMANDS: names.MEMORY_COMMANDS_DLQ}


def test_every_stage_has_an_agent():
    assert list(agents.AGENTS) == [stage.name for stage in STAGES]


def test_the_in_process_runner_queues_the_inputs_of_its_stages():
    assert LocalTopics.INPUTS == (names.CHAT_TURNS, names.MEMORY_CANDIDATES, names.MEMORY_COMMANDS)
    assert [stage.name for stage in IN_PROCESS] == ["ingest", "dedup", "commands"]


def test_a_worker_runs_the_agent_of_each_enabled_stage_on_its_declared_topic(tmp_path):
    app = build_worker(Settings(table_store="memory://", data_dir=tmp_path))
    running = {name: list(agent.channel.topics) for name, agent in app.faust.agents.items()}
    expected = {stage.name: [stage.reads] for stage in STAGES if stage.enabled(app.settings)}
    assert running == expected
    assert "sinks" not in running, "no sink configured"


def test_a_stage_used_in_batches_must_declare_them(tmp_path):
    import pytest

    from agents.consume import in_batches
    from streams.app.factory import create_app

    app = create_app(Settings(table_store="memory://", data_dir=tmp_path))
    with pytest.raises(topology.TopologyError):
        in_batches(app, topology.stage_named("commands"), object())
