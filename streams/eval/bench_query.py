"""`memstream bench query`: memory.query latency beside LangGraph's `InMemoryStore`.

For each size N, one user gets N synthetic but realistic memories (facts about family, work,
places, money, goals and dated episodes, with categories, importance, pins, provenance and
related edges), embedded once with the project's embedder and cached on disk. The same queries
then run, in alternating blocks in the same process, through:

- ours: embed the query, `plan_query` + `execute` — exactly what the HTTP handler calls: the
  agent's allowlist, filters, the ranking formula with the related boost, 1-3 episodic, time
  phrases, and the token budget counted with the real tokenizer;
- `InMemoryStore.search` over the same memories, indexed with the same embedder (its `embed`
  function reads the cached document vectors and embeds each query with the model, like ours).

Both timings include embedding the query on a worker thread (ours as the worker does it,
`InMemoryStore` in its own thread pool), so they are comparable end to end; the query
embedding alone is reported beside them. Figures are measured, never asserted.
"""
from __future__ import annotations

import hashlib
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from streams.read.categories import CategoryPolicy, load_policy
from streams.providers.embedders import Embedder
from streams.memory.model import Memory
from streams.read.query import QueryLimits, execute, plan_query
from streams.read.ranking import RankWeights
from streams.read.token_budget import TokenCounter, get_counter
from streams.memory.vector_index import UserIndex
from topics.query import QueryRequest

USER = "bench-ana"
NOW = datetime(2024, 12, 20, 18, tzinfo=timezone.utc)

_PEOPLE = ["Marta", "João", "Luis", "Sofia", "Inês", "Tomás", "Clara", "Rui", "Beatriz", "Miguel"]
_RELATIONS = ["sister", "brother", "cousin", "colleague", "friend", "neighbour", "manager", "aunt"]
_CITIES = ["Lisbon", "Porto", "Braga", "Coimbra", "Faro", "Madrid", "Paris", "Berlin", "Seville"]
_HOBBIES = ["plays the cello", "runs half marathons", "paints watercolours", "bakes sourdough",
            "climbs on weekends", "learns Japanese", "grows tomatoes", "swims before work"]
_FOODS = ["sushi", "bacalhau", "vegan curry", "pastéis de nata", "ramen", "grilled sardines"]
_GOALS = ["run a marathon in October", "save for a flat in Porto", "finish a data science course",
          "read 30 books this year", "learn to sail", "get a promotion to team lead"]
_MONEY = ["pays {n} euros rent every month", "saves {n} euros a month for a new car",
          "spends about {n} euros a month on groceries", "keeps {n} euros in an emergency fund",
          "budgets {n} euros for holidays this year"]
_TOPICS = ["the trip to {c}", "a budget for the flat", "Luna's vet visit", "the cello recital",
           "a job offer in {c}", "training for the marathon", "{p}'s wedding in {c}"]

QUERIES = [
    "What pet does Ana have?", "Where does Ana's sister live?", "What does Ana do for work?",
    "How much does Ana pay in rent?", "What are Ana's goals for this year?",
    "Which hobbies does Ana have?", "What food does Ana like?", "Who is Marta?",
    "What did we discuss last week?", "What did we talk about in March?",
    "How much is Ana saving each month?", "Is Ana learning a language?",
    "Who does Ana work with?", "What is Ana's budget for holidays?",
    "When did we talk about the wedding?", "Does Ana play an instrument?",
    "What course is Ana taking?", "Where did Ana travel recently?",
    "What happened two weeks ago?", "What does Ana's manager do?",
]


def synthetic_memories(n: int, seed: int = 7) -> list[Memory]:
    """N memories of one user, about 15 % of them dated episodes, deterministic for a seed."""
    rng = random.Random(seed)
    out: list[Memory] = []
    for i in range(n):
        person, relation, city = rng.choice(_PEOPLE), rng.choice(_RELATIONS), rng.choice(_CITIES)
        when = NOW - timedelta(days=rng.randint(0, 365), minutes=rng.randint(0, 1440))
        amount = rng.randrange(50, 2000, 10)
        kind = rng.random()
        episodic = kind < 0.15
        if episodic:
            day = when.date()
            topic = rng.choice(_TOPICS).format(c=city, p=person)
            summary = (f"On {day.isoformat()} (W{day.isocalendar().week:02d}, {day.year}) we "
                       f"discussed {topic}. Approach: list options and decide by Friday ({i}).")
            category, extra = "Conversation_Summary", {
                "date_iso": day.isoformat(), "week": day.isocalendar().week, "year": day.year}
        elif kind < 0.35:
            summary, category, extra = (f"Ana's {relation} {person} lives in {city} and "
                                        f"{rng.choice(_HOBBIES)} ({i}).", "Personal", {})
        elif kind < 0.5:
            summary, category, extra = (f"Ana {rng.choice(_MONEY).format(n=amount)} ({i}).",
                                        rng.choice(["Finance", "Budget"]), {})
        elif kind < 0.62:
            summary, category, extra = f"Ana wants to {rng.choice(_GOALS)} ({i}).", "Goals", {}
        elif kind < 0.7:
            summary, category, extra = (f"Ana is studying {rng.choice(['statistics', 'Japanese', 'design'])} "
                                        f"at a school in {city} ({i}).", "Education", {})
        else:
            summary, category, extra = (f"Ana likes {rng.choice(_FOODS)} and {rng.choice(_HOBBIES)} "
                                        f"with {person} in {city} ({i}).", "Other", {})
        out.append(Memory(
            id=f"m{i:06d}", user_id=USER, type="episodic" if episodic else "semantic",
            category=category, summary=summary, importance=rng.randint(1, 5),
            pinned=rng.random() < 0.03, created_at=when, updated_at=when,
            last_accessed=when + timedelta(days=rng.randint(0, 30)),
            source_turn_ids=[f"t{i // 40}:{i}"], role="user",
            agent_id=rng.choice([None, "planner", "supervisor"]), **extra,
        ))
    for i in range(0, n - 1, 5):  # related_to edges between neighbours in creation order
        out[i].relations[out[i + 1].id] = round(rng.uniform(0.6, 0.9), 4)
    return out


def cached_embeddings(texts: Sequence[str], embedder: Embedder, cache_dir: Path) -> np.ndarray:
    """Embed `texts` once per (model, texts) and keep the matrix on disk."""
    digest = hashlib.sha256("\n".join([embedder.profile.name, *texts]).encode()).hexdigest()[:16]
    path = cache_dir / f"bench-query-{len(texts)}-{digest}.npy"
    if path.exists():
        return np.load(path)
    vectors = embedder.embed(list(texts))
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values_ms)
    return {"p50": round(float(np.percentile(arr, 50)), 3), "p95": round(float(np.percentile(arr, 95)), 3),
            "mean": round(float(arr.mean()), 3), "n": int(arr.size)}


@dataclass
class Contenders:
    """The two query paths over the same memories, each a `query text -> result` callable."""

    ours: Callable[[str], Any]
    in_memory_store: Callable[[str], Any]
    embed_only: Callable[[str], Any]


def build(memories: Sequence[Memory], vectors: np.ndarray, embedder: Embedder, *, top_k: int,
          budget_tokens: int, policy: CategoryPolicy | None = None,
          counter: TokenCounter | None = None) -> Contenders:
    from langgraph.store.memory import InMemoryStore

    policy = policy or load_policy()
    counter = counter or get_counter()
    index = UserIndex(embedder.profile.dim)
    for memory, vector in zip(memories, vectors):
        index.upsert(memory, vector)
    limits, weights = QueryLimits(), RankWeights()
    header = "Memory updates since rev 40:\n- +created: [Goals] Ana wants to learn to sail (imp=3)"

    # The worker embeds off the event loop, in the default executor's threads
    # (`streams.app.services.embed`); so does this. (torch on the main thread of a busy machine can
    # be several times slower than on a worker thread, which would skew the comparison.)
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-embed")

    def embed_query(text: str) -> np.ndarray:
        return worker.submit(embedder.embed, [text]).result()[0]

    def ours(text: str) -> Any:
        request = QueryRequest(agent="supervisor", query=text, top_k=top_k,
                               budget_tokens=budget_tokens, filters={"importance_min": 1})
        vector = embed_query(text)
        plan = plan_query(request, USER, policy, limits, NOW)
        return execute(index, vector, plan, policy, weights, counter, (41, 40, header))[0]

    by_text = {m.summary: v.tolist() for m, v in zip(memories, vectors)}

    def embed_fn(texts: Sequence[str]) -> list[list[float]]:
        if all(t in by_text for t in texts):  # the documents: embedded once, above
            return [by_text[t] for t in texts]
        return embedder.embed(list(texts)).tolist()

    store = InMemoryStore(index={"dims": embedder.profile.dim, "embed": embed_fn, "fields": ["summary"]})
    namespace = (USER, "memories")
    for memory in memories:
        store.put(namespace, memory.id, {"summary": memory.summary, "category": memory.category,
                                         "type": memory.type, "importance": memory.importance})

    def in_memory_store(text: str) -> Any:
        return store.search(namespace, query=text, limit=top_k)

    def embed_only(text: str) -> Any:
        return embed_query(text)

    return Contenders(ours, in_memory_store, embed_only)


def measure(contenders: Contenders, queries: Sequence[str], rounds: int) -> dict[str, dict[str, float]]:
    """Each round runs every path over all queries, in turn (the order alternating between
    rounds), after one warm-up pass. Paths run in blocks rather than query by query: torch's
    thread team of one path slows the next path's first call down when they alternate."""
    paths = {"ours": contenders.ours, "in_memory_store": contenders.in_memory_store,
             "embed_only": contenders.embed_only}
    runs: dict[str, list[float]] = {name: [] for name in paths}
    for fn in paths.values():
        for text in queries:
            fn(text)
    for r in range(rounds):
        for name in (list(paths) if r % 2 == 0 else list(reversed(paths))):
            for text in queries:
                started = time.perf_counter()
                paths[name](text)
                runs[name].append((time.perf_counter() - started) * 1000)
    return {name: percentiles(values) for name, values in runs.items()}


def run_query_bench(sizes: Sequence[int], *, rounds: int, top_k: int, budget_tokens: int,
                    cache_dir: Path, embedder: Embedder | None = None,
                    queries: Sequence[str] = QUERIES) -> dict[str, Any]:
    """The report: per size, p50/p95 (ms) of ours, InMemoryStore and the query embedding."""
    if embedder is None:
        from streams.providers.embedders.minilm import LocalMiniLMEmbedder

        embedder = LocalMiniLMEmbedder()
    report: dict[str, Any] = {
        "embedder": embedder.profile.name, "queries": len(queries), "rounds": rounds,
        "top_k": top_k, "budget_tokens": budget_tokens, "sizes": {},
    }
    for n in sizes:
        memories = synthetic_memories(n)
        vectors = cached_embeddings([m.summary for m in memories], embedder, cache_dir)
        figures = measure(build(memories, vectors, embedder, top_k=top_k, budget_tokens=budget_tokens),
                          queries, rounds)
        figures["p95_ratio_ours_to_store"] = round(
            figures["ours"]["p95"] / figures["in_memory_store"]["p95"], 3)
        report["sizes"][str(n)] = figures
    return report


def render(report: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"memory.query latency (ms), {report['embedder']}, top_k={report['top_k']}, "
                        f"budget {report['budget_tokens']} tokens, {report['queries']} queries x "
                        f"{report['rounds']} rounds")
    for column in ("memories", "path", "p50", "p95", "mean"):
        table.add_column(column, justify="right" if column in ("p50", "p95", "mean") else "left")
    for n, figures in report["sizes"].items():
        for path in ("ours", "in_memory_store", "embed_only"):
            f = figures[path]
            table.add_row(n, {"ours": "memstream (filters, ranking, budget)",
                              "in_memory_store": "LangGraph InMemoryStore.search",
                              "embed_only": "query embedding alone"}[path],
                          f"{f['p50']:.2f}", f"{f['p95']:.2f}", f"{f['mean']:.2f}")
    console.print(table)
