from datetime import datetime, timedelta, timezone

from streams.write.episodic import (
    after_turn,
    due,
    episode,
    time_bucket,
    user_zone,
)
from topics.turns import Turn
from tests import defaults

T0 = datetime(2024, 12, 30, 23, 30, tzinfo=timezone.utc)


def turn(text: str, i: int, role: str = "user", speaker: str = "Ana", tz: str | None = None,
         minutes: int = 1) -> Turn:
    return Turn(user_id="u", thread_id="t", turn_id=str(i), role=role, speaker=speaker, text=text,
                ts=T0 + timedelta(minutes=minutes * i), timezone=tz)  # type: ignore[arg-type]


def test_time_buckets_are_in_the_users_zone():
    assert time_bucket(T0, user_zone(turn("x", 0))) == ("2024-12-30", 1, 2025)
    assert time_bucket(T0, user_zone(turn("x", 0, tz="Asia/Tokyo"))) == ("2024-12-31", 1, 2025)
    assert user_zone(turn("x", 0, tz="Not/AZone")).key == "UTC"


def test_outcome_after_cooldown_and_overflow_are_due_and_the_day_is_capped():
    rules = defaults.episode_rules(cooldown_turns=3, cooldown_minutes=10, max_per_day=2, buffer_turns=8)
    decided = turn("Great, we decided to book the Lisbon flights for June.", 5, role="assistant",
                   speaker="Vera")
    assert due({"turns_since": 1, "last_ts": (decided.ts - timedelta(minutes=2)).isoformat()},
               decided, rules) is None, "cooldown"
    assert due({"turns_since": 3}, decided, rules) == "outcome"
    assert due({"turns_since": 3}, turn("ok", 5, role="assistant"), rules) is None
    assert due({"turns_since": 8}, turn("Nice weather.", 5), rules) == "overflow"
    state = after_turn({}, decided, captured=True)
    state = after_turn(state, decided, captured=True)
    assert due({**state, "turns_since": 9}, decided, rules) is None, "daily cap"


def test_episode_summary_has_the_seed_format_and_covers_the_window():
    window = [
        turn("I want to plan a trip to Lisbon with my sister Marta.", 1),
        turn("Lisbon is lovely in June. Flights from Berlin are cheap then.", 2, role="assistant",
             speaker="Vera"),
        turn("Let's book the flights for June then.", 3),
        turn("Done: we decided to book the Lisbon flights for June.", 4, role="assistant",
             speaker="Vera"),
    ]
    fact = episode(window)
    assert fact is not None and fact.type == "episodic"
    assert fact.summary.startswith("On 2024-12-30 (W01, 2025) we discussed Lisbon")
    assert "Approach: " in fact.summary and len(fact.summary) <= 280


def test_observe_closes_an_episode_on_overflow_with_the_window_as_provenance():
    from streams.write.episodic import observe

    rules = defaults.episode_rules(cooldown_turns=3, cooldown_minutes=10, max_per_day=5, buffer_turns=4)
    entry, episodes, log = None, [], {}
    texts = ["I started pottery classes in Porto.", "The teacher Rui is great at glazing.",
             "We made bowls and a big vase.", "Pottery relaxes me after work.",
             "Next week we try the wheel.", "I also joined a choir.", "It meets on Mondays.",
             "The choir sings jazz.", "I love it.", "Our concert is in May."]
    for i, text in enumerate(texts):
        observed = observe(entry, turn(text, i), rules, window_n=10)
        entry, log[str(i)] = observed.entry, observed.record
        if observed.episode:
            episodes.append((observed.episode, observed.refs))
    assert len(episodes) == 2
    first, refs = episodes[0]
    assert refs == ["t:0", "t:1", "t:2", "t:3", "t:4"]
    assert "pottery" in first.summary.lower()
    assert len(entry["turns"]) <= 10
    again = observe(entry, turn(texts[-2], len(texts) - 2), rules, window_n=10, seen=log["8"])
    assert again.episode is None and again.entry == entry, "a replayed turn changes nothing"
    closing = observe(entry, turn(texts[4], 4), rules, window_n=10, seen=log["4"])
    assert closing.episode == episodes[0][0] and closing.refs == episodes[0][1], \
        "a replayed closing turn closes the same episode again"


def test_the_daily_cap_counts_the_users_episodes_across_threads():
    from streams.write.episodic import observe

    rules = defaults.episode_rules(cooldown_turns=1, cooldown_minutes=10, max_per_day=2, buffer_turns=8)
    user_day: dict = {}
    closed = []
    for thread in ("a", "b", "c"):
        entry = None
        for i, text in enumerate(["I want to plan a trip to Lisbon with Marta.",
                                  "Done: we decided to book the Lisbon flights for June."]):
            t = turn(text, i, role="assistant" if i else "user").model_copy(update={"thread_id": thread})
            observed = observe(entry, t, rules, window_n=10, user_day=user_day)
            entry = observed.entry
            if observed.episode is not None:
                closed.append(thread)
                user_day = observed.user_day
    assert closed == ["a", "b"], "the third thread's episode is over the user's daily cap"
    assert user_day == {"day": "2024-12-30", "count": 2}
