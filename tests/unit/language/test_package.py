"""The language package: a leaf, its word lists read from data files, the extractor's named steps."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from streams.language.answers import consent_answer
from streams.language.stemming import stem_words
from streams.language.wordlists import UnknownWordList, word_list, word_sequence
from streams.write.extraction import STEPS, RulesExtractor

PACKAGE = Path(__file__).resolve().parents[3] / "streams" / "language"


def test_the_package_imports_nothing_else_of_streams_but_its_errors() -> None:
    imported = set()
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
    outside = {m for m in imported if m.startswith("streams") and not m.startswith("streams.language")}
    assert outside <= {"streams.errors"}, outside


def test_every_data_file_is_a_word_list_that_some_rule_reads() -> None:
    sources = "".join(p.read_text("utf-8") for p in (PACKAGE.parent).rglob("*.py"))
    for path in sorted((PACKAGE / "data").glob("*.txt")):
        words = word_list(path.stem)
        assert words and all(w == w.strip() for w in words), path.name
        assert path.read_text("utf-8").startswith("#"), f"{path.name}: say what the list is for"
        assert f'"{path.stem}"' in sources, f"{path.name} is read by no rule"


def test_a_list_keeps_its_order_and_comments_are_not_words() -> None:
    adverbs = word_sequence("adverbs")
    assert adverbs[:3] == ("also", "just", "really") and "#" not in "".join(adverbs)
    assert word_list("adverbs") == frozenset(adverbs)
    assert "light" not in word_list("generic_words")  # a word of a comment line


def test_an_unknown_list_is_a_named_error() -> None:
    with pytest.raises(UnknownWordList):
        word_list("no_such_list")


def test_one_stemmer() -> None:
    assert stem_words(["hiking", "hikes", "dogs"]) == ["hike", "hike", "dog"]


@pytest.mark.parametrize(("text", "answer"), [
    ("yes, update it", "accept"), ("Yes, go ahead", "accept"), ("ok please change my name", "accept"),
    ("no, keep the old one", "reject"), ("no", None), ("yes I moved to Lisbon", None),
])
def test_consent_answers(text: str, answer: str | None) -> None:
    assert consent_answer(text) == answer


def test_the_extractor_runs_named_steps_in_order() -> None:
    names = [step.name for step in STEPS]
    assert names == ["speaker_roles", "image_caption", "secrets", "commands", "sentences", "pick",
                     "sentence_facts", "note", "shared_photo", "repeats"]
    assert RulesExtractor.steps is STEPS and len(set(names)) == len(names)
