"""`memstream dlq list|replay` (streams/cli/dlq.py) over letters read by a stand-in: what they
print, that a user's text is shown only with --show-text, that a bad selection is a clear
error (exit 2), and that --dry-run sends nothing."""
from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from streams.cli import dlq as dlq_cli
from streams.cli import main
from streams.pipeline.dead_letters import dead_letter_of
from streams.pipeline.records import Record
from streams.privacy.crypto import new_key
from streams.privacy.sealed import Sealer
from streams.privacy.user_keys import UserKeys
from streams.tools import dead_letters, redrive
from streams.tools.dead_letters import Selection, StoredLetter, Where, decode
from topics import names

TURN = json.dumps({"user_id": "ana", "thread_id": "t1", "turn_id": "7", "role": "user",
                   "text": "I adopted a dog named Luna.", "ts": "2024-05-01T10:00:00+00:00"}).encode()


class Opener:
    """The master key's opener, with the keys of one sealer."""

    def __init__(self, sealer: Sealer) -> None:
        self.sealer = sealer

    async def refresh(self) -> None:
        return None

    async def open_dead_letter(self, letter):  # type: ignore[no-untyped-def]
        raw = self.sealer.open(letter.raw_sealed)
        return letter.model_copy(update={"raw_b64": raw, "raw_sealed": None})


@pytest.fixture
def letters(monkeypatch: pytest.MonkeyPatch) -> list[Selection]:
    """Two letters of ana (one replayable, one truncated); the selections the commands read."""
    sealer = Sealer(UserKeys({}, new_key()))
    made = [dead_letter_of(Record(names.CHAT_TURNS, 1, 40 + i, b"ana", raw), "ingest", "oversized_text",
                           "too long", max_raw, sealer, ref="t1:7")
            for i, (raw, max_raw) in enumerate([(TURN, 4096), (TURN + b" " * 2000, 1024)])]
    stored = [decode(Where(names.CHAT_TURNS_DLQ, 1, i), 1_714_557_600_000, b"ana",
                     letter.model_dump_json().encode()) for i, letter in enumerate(made)]
    asked: list[Selection] = []

    async def read(bootstrap: str, selection: Selection, **kwargs: Any) -> list[StoredLetter]:
        asked.append(selection)
        return [s for s in stored if selection.matches(s)]

    monkeypatch.setattr(dead_letters, "read_dead_letters", read)
    monkeypatch.setattr(dlq_cli, "_unsealer", lambda bootstrap: Opener(sealer))
    return asked


def run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main.app, ["dlq", *args])


def test_list_shows_each_letter_and_the_count_by_reason_without_content(letters):
    result = run("list", "--broker", "kafka:9092")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if not line.startswith(("reading", "checking"))]
    assert lines[0].startswith("chat.turns.dlq/1/0  2024-05-01T10:00:00Z  ingest  oversized_text  user ana")
    assert lines[0].endswith("replayable") and "not replayable: truncated" in lines[1]
    assert lines[-1] == "2 dead letters (oversized_text 2); 1 replayable"
    assert "Luna" not in result.output


def test_list_json_and_show_text(letters):
    listed = json.loads(run("list", "--json", "--topic", "chat.turns").stdout)
    assert [d["replayable"] for d in listed["dead_letters"]] == [True, False]
    assert listed["summary"]["by_reason"] == {"oversized_text": 2}
    assert "Luna" not in json.dumps(listed)
    assert letters[-1].topics == (names.CHAT_TURNS_DLQ,)
    shown = run("list", "--show-text")
    assert "I adopted a dog named Luna." in shown.stderr, "asked for: the text, opened"
    assert "Luna" in json.loads(run("list", "--json", "--show-text").stdout)["dead_letters"][0]["text"]


@pytest.mark.parametrize("args, message", [
    (["--topic", "memory.events"], "no dead-letter topic 'memory.events'"),
    (["--stage", "sse"], "no stage 'sse'"),
    (["--since", "whenever it was"], "not a time"),
])
def test_a_selection_that_names_nothing_is_a_clear_error(letters, args, message):
    for command in ("list", "replay"):
        result = run(command, *args)
        assert result.exit_code == 2 and message in result.stderr
    assert letters == [], "nothing was read"


def test_replay_sends_the_replayable_and_dry_run_sends_nothing(letters, monkeypatch):
    sent: list[tuple[str, bytes | None, bytes]] = []

    class Sender:
        def __init__(self, *args: Any) -> None:
            pass

        async def __aenter__(self) -> "Sender":
            return self

        async def __aexit__(self, *exc: object) -> None:
            return None

        async def send(self, topic: str, key: bytes | None, value: bytes, headers: Any) -> Any:
            sent.append((topic, key, value))

            async def written() -> Where:
                return Where(topic, 1, 99)
            return written()

    monkeypatch.setattr(redrive, "ProducerSender", Sender)
    dry = json.loads(run("replay", "--dry-run", "--json").stdout)
    assert sent == [] and dry["dry_run"] and dry["would_replay"] == 1
    assert dry["skipped"] == {"truncated": 1}
    result = run("replay", "--reason", "oversized_text")
    assert result.exit_code == 0, result.output
    assert sent == [(names.CHAT_TURNS, b"ana", TURN)]
    assert "skipped chat.turns.dlq/1/1: truncated" in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "replayed 1 of 2 dead letters; 0 duplicates; skipped 1 (truncated 1)")


def test_the_help_names_both_commands_and_their_filters():
    assert {"list", "replay"} <= set(run("--help").stdout.split())
    for command in ("list", "replay"):
        text = run(command, "--help").stdout
        assert all(option in text for option in ("--topic", "--reason", "--stage", "--since", "--until",
                                                  "--broker", "--json"))
    assert "--dry-run" in run("replay", "--help").stdout and "--show-text" in run("list", "--help").stdout
