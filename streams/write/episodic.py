"""Episodic capture (seed 003, seed 004 §3): what a stretch of conversation was about.

Pure logic. After an assistant turn that shows an outcome (a decision, a plan, a next step), or
when the thread's buffer overflows (`BUFFER_TURNS` turns since the last episode), the recent
turns become one episode: "On {YYYY-MM-DD} (W{WW}, {YYYY}) we discussed {topic}. Approach: …",
dated in the user's time zone. Cooldown (turns or minutes since the last episode) and a daily
cap bound how many are written; dedup then merges an episode into the last one of the same
theme within the window (episodic bands), so novelty is decided by the same code as for facts.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from streams.observability.metrics import EPISODIC_SKIPS
from streams.language.captions import split_image_caption
from streams.language.sentences import STOPWORDS, words
from streams.language.splitting import split_sentences
from streams.language.wordlists import word_list
from streams.settings import EpisodicSettings, WriteSettings
from topics.candidates import Fact
from topics.turns import Role, Turn

_OUTCOME = re.compile(
    r"\b(?:decided|we(?:'ll| will)|let's|the plan is|next step|next steps|booked|scheduled|"
    r"set up|created|sent|done|completed|agreed|signed up|i(?:'ve| have) (?:added|saved|set))\b",
    re.I,
)
_NAME = re.compile(r"\b[A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})?\b")
_NOT_TOPICS = word_list("episode_not_topics")


_VERBISH = ("ed", "ing", "ly")  # past tenses, gerunds, adverbs: rarely what a talk was about


@dataclass(frozen=True)
class EpisodeRules:
    """When a thread's recent turns become an episode (seed 003 knobs; `rules_from`)."""

    cooldown_turns: int
    cooldown_minutes: int
    max_per_day: int
    buffer_turns: int


def rules_from(episodic: EpisodicSettings, write: WriteSettings) -> EpisodeRules:
    """The episode rules of the settings; the buffer's length is the write path's."""
    return EpisodeRules(
        cooldown_turns=episodic.episodic_cooldown_turns,
        cooldown_minutes=episodic.episodic_cooldown_minutes,
        max_per_day=episodic.episodic_max_per_day, buffer_turns=write.buffer_turns,
    )


def user_zone(turn: Turn) -> ZoneInfo:
    """The user's time zone from the turn (fallback UTC, seed 003)."""
    try:
        return ZoneInfo(turn.timezone) if turn.timezone else ZoneInfo("UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def time_bucket(ts: datetime, zone: ZoneInfo) -> tuple[str, int, int]:
    """(date_iso, ISO week, ISO year) of `ts` in `zone`."""
    local = ts.astimezone(zone)
    iso = local.isocalendar()
    return local.date().isoformat(), iso.week, iso.year


def has_outcome(turn: Turn) -> bool:
    """An assistant turn that reports a decision, a plan or a next step (seed 003 signals)."""
    return turn.role == Role.assistant and bool(_OUTCOME.search(turn.text))


def day_count(user_day: dict[str, Any] | None, day: str) -> int:
    """Episodes the user's day record counts on `day`."""
    return int(user_day.get("count", 0)) if user_day and user_day.get("day") == day else 0


def counted(user_day: dict[str, Any] | None, day: str) -> dict[str, Any]:
    """The user's day record with one more episode on `day`."""
    return {"day": day, "count": day_count(user_day, day) + 1}


def due(state: dict[str, Any], turn: Turn, rules: EpisodeRules,
        user_day: dict[str, Any] | None = None) -> str | None:
    """Why an episode is due after `turn` ("outcome" or "overflow"), or None.

    `state` is the thread's episodic state: turns since the last episode and its time.
    `user_day` is the user's count of episodes of the day (day in the user's zone): the daily
    cap is per user, across threads (seed 003). Without it, the thread's own count is used.
    """
    since = int(state.get("turns_since", 0))
    if since >= rules.buffer_turns:
        reason = "overflow"
    elif has_outcome(turn):
        reason = "outcome"
    else:
        return None
    last = state.get("last_ts")
    cooled = since >= rules.cooldown_turns or (
        last is not None and turn.ts - datetime.fromisoformat(last) >= timedelta(minutes=rules.cooldown_minutes))
    if not cooled:
        EPISODIC_SKIPS.labels(reason="cooldown").inc()
        return None
    day, _, _ = time_bucket(turn.ts, user_zone(turn))
    counts = user_day if user_day is not None else {"day": state.get("day"),
                                                    "count": state.get("day_count", 0)}
    if day_count(counts, day) >= rules.max_per_day:
        EPISODIC_SKIPS.labels(reason="daily_cap").inc()
        return None
    return reason


def after_turn(state: dict[str, Any], turn: Turn, captured: bool) -> dict[str, Any]:
    """The thread's episodic state after `turn` (and its episode, if one was captured)."""
    state = dict(state)
    if not captured:
        state["turns_since"] = int(state.get("turns_since", 0)) + 1
        return state
    day, _, _ = time_bucket(turn.ts, user_zone(turn))
    count = int(state.get("day_count", 0)) if state.get("day") == day else 0
    state.update(turns_since=0, last_ts=turn.ts.isoformat(), day=day, day_count=count + 1)
    return state


def topics(window: Sequence[Turn], limit: int = 4) -> list[str]:
    """The most mentioned names and content words of the window, speakers left out."""
    speakers = {t.speaker_name.lower() for t in window}
    counts: Counter[str] = Counter()
    for turn in window:
        text, caption = split_image_caption(turn.text)
        for name in _NAME.findall(text):
            if name.lower() not in speakers and name.lower() not in STOPWORDS | _NOT_TOPICS:
                counts[name] += 2
        for word in words(text + " " + (caption or "")):
            low = word.lower()
            if (len(low) >= 5 and low.isalpha() and not low.endswith(_VERBISH)
                    and low not in STOPWORDS | _NOT_TOPICS | speakers):
                counts[low] += 1
    seen: set[str] = set()
    out = []
    for term, _ in counts.most_common():
        if term.lower() not in seen:
            seen.add(term.lower())
            out.append(term)
        if len(out) >= limit:
            break
    return out


def _approach(window: Sequence[Turn]) -> str | None:
    for turn in reversed(window):
        for sentence in split_sentences(split_image_caption(turn.text)[0]):
            if _OUTCOME.search(sentence) and 3 <= len(sentence.split()) <= 30:
                return sentence.rstrip(".!?")
    return None


def _who(window: Sequence[Turn]) -> str:
    names = list(dict.fromkeys(t.speaker_name for t in window if t.role in (Role.user, Role.assistant)))
    if len(names) <= 1:
        return names[0] if names else "We"
    return ", ".join(names[:-1]) + " and " + names[-1]


def episode(window: Sequence[Turn], max_chars: int = 280) -> Fact | None:
    """The episode of `window` (user and assistant turns), or None when it has no topic."""
    window = [t for t in window if t.role in (Role.user, Role.assistant)]
    subjects = topics(window)
    if not window or not subjects:
        return None
    last = window[-1]
    date_iso, week, year = time_bucket(last.ts, user_zone(last))
    who = _who(window)
    subject = "we" if any(t.role == Role.assistant for t in window) else who
    topic = ", ".join(subjects[:-1]) + " and " + subjects[-1] if len(subjects) > 1 else subjects[0]
    summary = f"On {date_iso} (W{week:02d}, {year}) {subject} discussed {topic}."
    approach = _approach(window)
    if approach and len(summary) + len(approach) + 12 <= max_chars:
        summary += f" Approach: {approach}."
    return Fact(type="episodic", summary=summary[:max_chars], category="Conversation_Summary",
                importance=2, tags=["episode", *[s.lower() for s in subjects[:3]]], entities=subjects)


@dataclass(frozen=True)
class Observed:
    """A thread's buffer entry after one turn, the episode that turn closes (if any), and the
    record to keep under the turn's key so that a replay of it decides the same."""

    entry: dict[str, Any]
    episode: Fact | None
    refs: list[str]
    record: dict[str, Any]
    user_day: dict[str, Any] | None = None
    """The user's new day record when this turn closed an episode (None: unchanged)."""

    @property
    def context(self) -> list[Turn]:
        return [Turn.model_validate(t) for t in self.entry["turns"]]


def buffered_turn(turn: Turn, redact: Any = lambda text: text) -> dict[str, Any]:
    """`turn` as its thread's buffer keeps it: its text passed through `redact`, no metadata."""
    return turn.model_copy(update={"text": redact(turn.text), "metadata": {}}).model_dump(mode="json")


def admitted_window(window: Sequence[Turn], admit: Any) -> list[Turn]:
    """The window's turns with their texts as `admit` leaves them (texts in, texts out: what
    the write policy lets an episode be made of, `streams.write.write_policy.WritePolicy.clean`)."""
    texts = admit([t.text for t in window])
    return [t.model_copy(update={"text": text}) for t, text in zip(window, texts)]


def observe(entry: dict[str, Any] | None, turn: Turn, rules: EpisodeRules, window_n: int,
            redact: Any = lambda text: text, seen: dict[str, Any] | None = None,
            user_day: dict[str, Any] | None = None, admit: Any = None) -> Observed:
    """Add `turn` to its thread's buffer (last `buffer_turns` turns, texts passed through
    `redact`) and decide whether it closes an episode; `refs` is the episode's provenance.
    The episode is made of the window's texts as `admit` leaves them (the write policy: no
    sentence it refuses, nothing such a sentence rests on); without `admit`, as they are.

    `seen` is the record this function returned when it saw the turn before. A replayed turn
    (after a crash, or re-sent) changes nothing and closes the episode it closed the first
    time, however far back it is: the decision is per turn, not per buffer position.
    `user_day` is the user's episode count of the day (`due`).
    """
    entry = dict(entry or {"turns": [], "episodic": {}})
    if seen is not None:
        closed = seen.get("episode")
        fact = Fact.model_validate(closed) if closed else None
        return Observed(entry, fact, list(seen.get("refs", [])), seen)
    # The buffered turns stay as stored: only an episode's window is read back into turns.
    buffered = [*entry["turns"], buffered_turn(turn, redact)]
    state = dict(entry.get("episodic") or {})
    reason = due(state, turn, rules, user_day)
    fact, refs = None, []
    if reason is not None:
        since = int(state.get("turns_since", 0)) + 1
        window = [Turn.model_validate(t) for t in buffered[-min(since, window_n, len(buffered)):]]
        fact = episode(admitted_window(window, admit) if admit is not None else window)
        refs = [t.ref for t in window] if fact else []
        if fact is None:
            EPISODIC_SKIPS.labels(reason="no_topic").inc()
    entry["turns"] = buffered[-max(rules.buffer_turns, window_n):]
    entry["episodic"] = after_turn(state, turn, captured=fact is not None)
    record = {"episode": fact.model_dump(mode="json") if fact else None, "refs": refs}
    new_day = None
    if fact is not None and user_day is not None:
        new_day = counted(user_day, time_bucket(turn.ts, user_zone(turn))[0])
    return Observed(entry, fact, refs, record, new_day)
