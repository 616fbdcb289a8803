"""The worker's stages run in process, without Kafka: for fast quality iteration and tests.

Same fact pipeline, same `MemoryState`, same ranking as the worker; only the transport is
missing. `memstream bench locomo --offline` reports recall from it in seconds.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Iterable

from streams.write import policy
from streams.read import ranking
from streams.providers.embedder import Embedder
from streams.write.episodic import observe, rules_from
from streams.write.facts import FactPipeline, candidates_of, hot_command, mentions_topic
from streams.memory.state import Applied, DedupConfig, MemoryState
from streams.read.query import QueryHit, rank
from streams.app.settings import Settings
from streams.write.trigger import CommandKind
from streams.memory.vector_index import VectorIndex
from topics.candidates import Candidate
from topics.commands import Command
from topics.turns import Turn


class OfflinePipeline:
    """Turns in, memories in dicts, queries answered — all in this process."""

    def __init__(self, settings: Settings, embedder: Embedder) -> None:
        self.settings = settings
        self.embedder = embedder
        self.facts = FactPipeline(settings)
        self.state = MemoryState(
            memories={}, applied={}, users={}, thread_revs={},
            index=VectorIndex(embedder.profile.dim),
            config=DedupConfig(
                profile=embedder.profile, neighbours_k=settings.memory_neighbors_k,
                link_min=settings.link_min,
                episodic_merge_window=timedelta(hours=settings.episodic_merge_window_hours),
                use_heuristics=settings.memory_enable_entity_heuristics,
            ),
        )
        self.weights = ranking.weights_from_settings(settings)
        self.buffers: dict[str, dict] = {}
        self.turn_log: dict[str, dict] = {}
        self.episodes = rules_from(settings)

    def ingest(self, turns: Iterable[Turn], batch: int = 64) -> list[Applied]:
        """Run turns through extraction and dedup, embedding in batches like the worker.

        A hot-path command said in a turn (forget, "don't remember this") is applied before
        the turns after it, as in the worker.
        """
        applied: list[Applied] = []
        pending: list[Candidate] = []

        def flush() -> None:
            for start in range(0, len(pending), batch):
                chunk = pending[start:start + batch]
                vectors = self.embedder.embed([c.fact.summary for c in chunk])
                applied.extend(self.state.apply(c, v) for c, v in zip(chunk, vectors))
            pending.clear()

        for turn in turns:
            if not self.settings.memory_enabled:
                continue
            topics = self.state.blocked_topics(turn.user_id)
            key, turn_key = f"{turn.user_id}|{turn.thread_id}", f"{turn.user_id}|{turn.ref}"
            seen = self.turn_log.get(turn_key)
            observed = observe(self.buffers.get(key), turn, self.episodes,
                               self.settings.episodic_window_n, policy.redact, seen)
            if seen is None:
                self.buffers[key] = observed.entry
                self.turn_log[turn_key] = observed.record
            result = self.facts.facts(turn, topics)
            if result.command is not None and result.command.kind in (
                    CommandKind.forget, CommandKind.dont_remember):
                flush()
                applied.append(self.command(hot_command(turn, result.command)))
                continue
            episode = observed.episode if self.settings.episodic_enabled else None
            if episode is not None and mentions_topic(episode.summary, topics):
                episode = None
            pending.extend(candidates_of(turn, result, episode, observed.refs))
        flush()
        return applied

    def command(self, command: Command) -> Applied:
        """Apply one `memory.commands` record."""
        text = command.text if command.kind == "edit" else command.query
        vector = self.embedder.embed([text])[0] if text else None
        return self.state.apply_command(command, vector)

    def query(self, user_id: str, text: str, top_k: int) -> list[QueryHit]:
        vector = self.embedder.embed([text])[0]
        return rank(self.state.index.user(user_id), vector, top_k=top_k,
                    candidates=self.settings.memory_context_topk, weights=self.weights)
