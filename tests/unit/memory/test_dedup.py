from datetime import datetime, timedelta, timezone

import pytest

from streams.memory import dedup

from streams.memory.dedup import Action, decide, same_fact_heuristic
from streams.providers.embedders import EmbedderProfile

# The seed 002 bands: these tests check the decision logic, not MiniLM's calibration.
SEED_BANDS = EmbedderProfile("seed-bands", 384, 0.90, 0.80, 0.92, 0.85)
from streams.memory.model import Memory

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def memory(summary: str, type_: str = "semantic", created: datetime = T0, entities=()) -> Memory:
    return Memory(id=summary[:8], user_id="u", type=type_, summary=summary, created_at=created,
                  updated_at=created, last_accessed=created, entities=list(entities))


def run(neighbours, type_="semantic", summary="Ana's dog Luna is 3.", when=T0, entities=()):
    return decide(memory_type=type_, summary=summary, entities=entities, event_time=when,
                  neighbours=neighbours, profile=SEED_BANDS, merge_window=timedelta(hours=72))


def test_no_neighbours_creates():
    assert run([]).action is Action.create


def test_auto_band_updates():
    m = memory("Ana has a dog called Luna who is 3.")
    d = run([(m, 0.95)])
    assert d.action is Action.update and d.target is m


def test_below_bands_creates():
    assert run([(memory("Ana likes jazz."), 0.5)]).action is Action.create


def test_check_band_uses_heuristics():
    same = memory("Ana's dog Luna is 3 years old.", entities=["Luna"])
    assert run([(same, 0.85)], entities=["Luna"]).action is Action.update
    changed = memory("Ana's dog Luna is 4 years old.", entities=["Luna"])
    assert run([(changed, 0.85)], entities=["Luna"]).action is Action.supersede
    other_subject = memory("Ana's cat Miso is 4 years old.", entities=["Miso"])
    assert run([(other_subject, 0.85)], entities=["Luna"]).action is Action.create


def test_a_changed_value_supersedes_even_in_the_auto_band():
    old = memory("Ana's dog Luna is 3 years old.", entities=["Luna"])
    decision = run([(old, 0.96)], summary="Ana's dog Luna is 4 years old.", entities=["Luna"])
    assert decision.action is Action.supersede and decision.target is old


def test_episodic_merges_only_inside_window():
    old = memory("On 2024-04-01 Ana and Bo discussed Lisbon.", "episodic", T0 - timedelta(days=10))
    assert run([(old, 0.99)], type_="episodic").action is Action.create
    recent = memory("On 2024-05-01 Ana and Bo discussed Lisbon.", "episodic", T0 - timedelta(hours=5))
    assert run([(recent, 0.99)], type_="episodic").action is Action.update


def test_episodic_bands_are_stricter():
    # 0.91 is in the semantic auto band but only in the episodic check band, where the
    # heuristic sees different entities.
    sem = memory("Ana went hiking with Bo.")
    assert run([(sem, 0.91)]).action is Action.update
    epi = memory("Ana went hiking with Bo.", "episodic")
    assert run([(epi, 0.91)], type_="episodic").action is Action.create


def test_same_fact_heuristic_conflicting_numbers():
    assert not same_fact_heuristic("Luna is 3.", [], "Luna is 4.", [])
    assert same_fact_heuristic("Luna is 3.", [], "Luna is 3 now.", [])


@pytest.mark.parametrize("new, old, changed", [
    ("Ana lives in Berlin.", "Ana lives in Lisbon.", True),
    ("Jon works at Bosch.", "Jon works at Siemens.", True),
    ("Jon's favourite band is Coldplay.", "Jon's favourite band is Radiohead.", True),
    ("Ana is vegan.", "Ana is vegetarian.", True),
    ("Ana lives in Lisbon with Rui.", "Ana lives in Lisbon.", False),   # more detail, not a change
    ("Ana's father lives in Porto.", "Ana's mother lives in Lisbon.", False),  # another subject
    ("Ana lives in Lisbon.", "Ana lives in Lisbon.", False),
    ("Ana loves Berlin.", "Ana lives in Lisbon.", False),               # another predicate
])
def test_changed_single_valued_slot(new: str, old: str, changed: bool) -> None:
    assert dedup.changed_slot(new, old) is changed


def test_a_changed_slot_supersedes_below_the_conflict_band() -> None:
    """'lives in Lisbon' / 'lives in Berlin' embed at ~0.77 (MiniLM), under the band where value
    conflicts are looked for; the slot still makes it a supersede, not a second current city."""
    old = memory("Ana lives in Lisbon.")
    decision = run([(old, 0.77)], summary="Ana lives in Berlin.")
    assert decision.action is dedup.Action.supersede and decision.target is old
