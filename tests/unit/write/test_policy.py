"""Policy filter: every fake secret in the corpus is blocked, ordinary chat is not."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from streams.write.policy import REDACTED, PolicyViolation, find_secrets, is_storable, redact

DATA = Path(__file__).resolve().parents[2] / "data"


def _load(name: str) -> list[dict[str, str]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


SECRETS = _load("secrets_corpus.jsonl")
BENIGN = _load("benign_sentences.jsonl")


def test_corpora_are_substantial() -> None:
    assert len(SECRETS) >= 40
    assert len(BENIGN) >= 40


@pytest.mark.parametrize("row", SECRETS, ids=lambda r: r["kind"])
def test_every_secret_is_blocked(row: dict[str, str]) -> None:
    ok, reason = is_storable(row["text"])
    assert not ok, row
    assert reason in {v.value for v in PolicyViolation}


@pytest.mark.parametrize("row", BENIGN, ids=lambda r: r["text"][:30])
def test_benign_sentences_pass(row: dict[str, str]) -> None:
    assert find_secrets(row["text"]) == []
    assert is_storable(row["text"]) == (True, None)
    assert redact(row["text"]) == row["text"]


@pytest.mark.parametrize("row", SECRETS, ids=lambda r: r["kind"])
def test_redact_removes_the_secret(row: dict[str, str]) -> None:
    cleaned = redact(row["text"])
    assert REDACTED in cleaned
    assert find_secrets(cleaned) == [], cleaned


@pytest.mark.parametrize(
    ("text", "secret", "reason"),
    [
        ("my token is ghp_FAKEabcdefghijklmnopqrstuvwxyz012345 ok", "ghp_FAKE", "secret"),
        ("use sk-ant-api03-FAKEFAKEFAKEFAKEFAKEFAKE-xyz now", "sk-ant", "secret"),
        ("My password is hunter2, right", "hunter2", "password"),
        ("Your verification code is 482913.", "482913", "one_time_code"),
        ("card 4111 1111 1111 1111 expires soon", "4111", "card_number"),
        ("postgres://admin:S3cretPass@db.example.com/prod", "S3cretPass", "secret"),
    ],
)
def test_redact_keeps_the_rest(text: str, secret: str, reason: str) -> None:
    assert reason in find_secrets(text)
    cleaned = redact(text)
    assert secret not in cleaned
    assert REDACTED in cleaned
    assert len(cleaned) > len(REDACTED)  # only the secret span goes, the rest stays


def test_card_numbers_need_a_valid_luhn_checksum() -> None:
    assert find_secrets("card 4111 1111 1111 1111") == ["card_number"]
    assert find_secrets("card 4111 1111 1111 1112") == []


def test_passwords_in_prose_are_not_secrets() -> None:
    assert find_secrets("My password is too short, the site says.") == []
    assert find_secrets("The pin is in the drawer.") == []
    assert find_secrets("My secret: I hate mornings.") == []


def test_empty_text_is_storable() -> None:
    assert is_storable("") == (True, None)
    assert redact("") == ""
