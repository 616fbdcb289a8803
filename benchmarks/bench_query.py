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
embedding alone is reported beside them, with the ratio of our p95 to its p95 (how much of a
query is the search rather than the model), and ours without the embedding (each query's
vector computed once beforehand: the search's own cost, which the model's time on a busy
machine can hide). With `after_write` (the default), ours is also timed with one memory written
into the index before each query (`ours_after_write`), as in a live chat, where every turn
writes and the next one reads: what a query costs when the BM25 index just changed. Figures are
measured, never asserted.

Seeding is in process and in bulk: the memories go straight into the `UserIndex` the handler
queries (`streams.memory.vector_index`, what the worker rebuilds from its `memories` table),
never through HTTP. Only the first `embed_max` documents (2,000 by default; a prefix, the same
at every size, so one cache serves all) are embedded with the model: on a busy 2-core machine
MiniLM embeds some tens of texts a second, so 100,000 documents would take hours. The vector of
every later document is an embedded one's (row i takes row i mod embed_max's) plus Gaussian
noise, L2-normalised, at cosine ≈ 0.9 to it: what a query costs (a matrix product over every
row, the filter masks, a partial sort, the budget) does not depend on the vectors' content,
though which items come back does. `InMemoryStore` is compared up to `store_max` memories
(10,000 by default): its search is a Python loop, about 0.5 s a query at 10,000 here.
"""
from __future__ import annotations

import hashlib
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from streams.read.categories import CategoryPolicy, load_policy
from streams.read.fusion import COSINE_ONLY, Retrieval
from streams.providers.embedders import Embedder
from streams.memory.model import Memory
from streams.read.query import QueryLimits, execute, plan_query
from streams.read.ranking import weights_of
from streams.settings import ReadSettings
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
    # questions that combine facts (streams/read/evidence.py: gathered, not ranked one by one)
    "How many times did Ana travel this year?", "How has Ana's rent changed?",
    "What did Ana do before she moved to Lisbon?", "What do Ana and Marta both like?",
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


Advance = Callable[[int], None]


def _nothing(_: int) -> None:
    pass


def cached_embeddings(texts: Sequence[str], embedder: Embedder, cache_dir: Path,
                      advance: Advance = _nothing, chunk: int = 256) -> np.ndarray:
    """Embed `texts` once per (model, texts) and keep the matrix on disk; `advance(k)` is
    called as chunks of k texts are done (or all at once from the cache)."""
    digest = hashlib.sha256("\n".join([embedder.profile.name, *texts]).encode()).hexdigest()[:16]
    path = cache_dir / f"bench-query-{len(texts)}-{digest}.npy"
    if path.exists():
        advance(len(texts))
        return np.load(path)
    parts = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-seed") as pool:
        for i in range(0, len(texts), chunk):  # off the main thread, as the worker embeds
            parts.append(pool.submit(embedder.embed, list(texts[i:i + chunk])).result())
            advance(len(parts[-1]))
    vectors = (np.concatenate(parts) if parts
               else np.zeros((0, embedder.profile.dim), dtype=np.float32))
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def derived_vectors(base: np.ndarray, n: int, noise: float = 0.5, seed: int = 11) -> np.ndarray:
    """`n` unit rows: the first `len(base)` are `base`; row i after them is row `i % len(base)`
    plus Gaussian noise (per component N(0, noise²/dim): cosine ≈ 1/sqrt(1+noise²) ≈ 0.9 to
    its source), L2-normalised. Deterministic for a seed."""
    base = np.asarray(base, dtype=np.float32)
    if n <= len(base):
        return base[:n]
    if not len(base):
        raise ValueError("derived_vectors needs at least one embedded row")
    dim = base.shape[1]
    rng = np.random.default_rng(seed)
    extra = base[np.arange(len(base), n) % len(base)]
    extra = extra + rng.normal(0.0, noise / np.sqrt(dim), size=extra.shape).astype(np.float32)
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.concatenate([base, extra.astype(np.float32)])


def seed_vectors(memories: Sequence[Memory], embedder: Embedder, cache_dir: Path, embed_max: int,
                 advance: Advance = _nothing) -> np.ndarray:
    """The documents' vectors: the first `embed_max` embedded (cached), the rest derived."""
    embedded = cached_embeddings([m.summary for m in memories[:max(embed_max, 1)]], embedder,
                                 cache_dir, advance)
    return derived_vectors(embedded, len(memories))


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values_ms)
    return {"p50": round(float(np.percentile(arr, 50)), 3), "p95": round(float(np.percentile(arr, 95)), 3),
            "mean": round(float(arr.mean()), 3), "n": int(arr.size)}


@dataclass
class Contenders:
    """The two query paths over the same memories, each a `query text -> result` callable."""

    ours: Callable[[str], Any]
    in_memory_store: Optional[Callable[[str], Any]]  # None: not compared at this size
    embed_only: Callable[[str], Any]
    search_only: Optional[Callable[[str], Any]] = None
    """Ours with the query's vector already computed: the search's own cost (plan, filters,
    ranking, budget), which a busy machine's noisy model time does not hide."""
    ours_dense: Optional[Callable[[str], Any]] = None
    """Ours with dense retrieval, beside ours when ours is hybrid (same index, same run)."""
    lexical_rebuild_ms: Optional[dict[str, float]] = None
    """Hybrid only: the user's BM25 scores of one query with the index made from nothing (the
    first query after the worker rebuilt it), and again right after one memory changed."""
    ours_after_write: Optional[Callable[[str], Any]] = None
    """Ours with one new memory written into the index just before the query (the write is
    inside the time: tens of microseconds)."""


def build(memories: Sequence[Memory], vectors: np.ndarray, embedder: Embedder, *, top_k: int,
          budget_tokens: int, policy: CategoryPolicy | None = None,
          counter: TokenCounter | None = None, with_store: bool = True,
          advance: Advance = _nothing, retrieval: Retrieval = COSINE_ONLY,
          after_write: bool = True) -> Contenders:
    """The paths over `memories`, seeded in bulk: the index row by row as the worker's
    `VectorIndex.rebuild` does; `advance(k)` as k memories are in (once more with the store).
    `retrieval` is ours'; when it is hybrid, ours with dense retrieval is measured beside it;
    with `after_write`, ours after one write too (`Contenders.ours_after_write`)."""
    policy = policy or load_policy()
    counter = counter or get_counter()
    index = UserIndex(embedder.profile.dim)
    for i, (memory, vector) in enumerate(zip(memories, vectors), 1):
        index.upsert(memory, vector)
        if i % 1000 == 0 or i == len(memories):
            advance(1000 if i % 1000 == 0 else i % 1000)
    limits, weights = QueryLimits.of(ReadSettings()), weights_of(ReadSettings())
    header = "Memory updates since rev 40:\n- +created: [Goals] Ana wants to learn to sail (imp=3)"

    # The worker embeds off the event loop, in the default executor's threads
    # (`streams.app.services.embed`); so does this. (torch on the main thread of a busy machine can
    # be several times slower than on a worker thread, which would skew the comparison.)
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-embed")

    def embed_query(text: str) -> np.ndarray:
        return worker.submit(embedder.embed, [text]).result()[0]

    def search(text: str, vector: np.ndarray, how: Retrieval = retrieval) -> Any:
        request = QueryRequest(agent="supervisor", query=text, top_k=top_k,
                               budget_tokens=budget_tokens, filters={"importance_min": 1})
        plan = plan_query(request, USER, policy, limits, NOW)
        return execute(index, vector, plan, policy, weights, counter, (41, 40, header), how)[0]

    def ours(text: str) -> Any:
        return search(text, embed_query(text))

    def ours_dense(text: str) -> Any:
        return search(text, embed_query(text), replace(Retrieval.of(ReadSettings()), mode="dense"))

    rebuild_ms: dict[str, float] | None = None
    if retrieval.mode == "hybrid" and len(memories):
        started = time.perf_counter()
        index.lexical_scores("warm")
        cold = (time.perf_counter() - started) * 1000
        first = memories[0]
        index.update_doc(first.model_copy(update={"summary": first.summary + " (edited)"}))
        started = time.perf_counter()
        index.lexical_scores("warm")
        rebuild_ms = {"cold": round(cold, 3), "after_one_change": round((time.perf_counter() - started) * 1000, 3)}
        index.update_doc(first)
    dense_path = ours_dense if retrieval.mode == "hybrid" else None
    writes = 0

    def ours_after_write(text: str) -> Any:
        """A chat turn: one new memory written (its own words, so the BM25 index changes), then
        the next query."""
        nonlocal writes
        template = memories[writes % len(memories)]
        index.upsert(template.model_copy(update={
            "id": f"w{writes:06d}", "summary": f"{template.summary} Said again on turn {writes}."}),
            vectors[writes % len(vectors)])
        writes += 1
        return ours(text)

    write_path = ours_after_write if after_write and len(memories) else None

    query_vectors: dict[str, np.ndarray] = {}

    def search_only(text: str) -> Any:
        if text not in query_vectors:  # embedded once, in the warm-up pass
            query_vectors[text] = embed_query(text)
        return search(text, query_vectors[text])

    def embed_only(text: str) -> Any:
        return embed_query(text)

    if not with_store:
        return Contenders(ours, None, embed_only, search_only, dense_path, rebuild_ms, write_path)
    from langgraph.store.memory import InMemoryStore

    by_text = {m.summary: v.tolist() for m, v in zip(memories, vectors)}

    def embed_fn(texts: Sequence[str]) -> list[list[float]]:
        if all(t in by_text for t in texts):  # the documents: embedded once, above
            return [by_text[t] for t in texts]
        return embedder.embed(list(texts)).tolist()

    store = InMemoryStore(index={"dims": embedder.profile.dim, "embed": embed_fn, "fields": ["summary"]})
    namespace = (USER, "memories")
    for i, memory in enumerate(memories, 1):
        store.put(namespace, memory.id, {"summary": memory.summary, "category": memory.category,
                                         "type": memory.type, "importance": memory.importance})
        if i % 1000 == 0 or i == len(memories):
            advance(1000 if i % 1000 == 0 else i % 1000)

    def in_memory_store(text: str) -> Any:
        return store.search(namespace, query=text, limit=top_k)

    return Contenders(ours, in_memory_store, embed_only, search_only, dense_path, rebuild_ms,
                      write_path)


def measure(contenders: Contenders, queries: Sequence[str], rounds: int) -> dict[str, dict[str, float]]:
    """Each round runs every path over all queries, in turn (the order alternating between
    rounds), after one warm-up pass. Paths run in blocks rather than query by query: torch's
    thread team of one path slows the next path's first call down when they alternate."""
    paths = {"ours": contenders.ours, "ours_after_write": contenders.ours_after_write,
             "in_memory_store": contenders.in_memory_store,
             "embed_only": contenders.embed_only, "search_only": contenders.search_only,
             "ours_dense": contenders.ours_dense}
    paths = {name: fn for name, fn in paths.items() if fn is not None}
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


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def run_query_bench(sizes: Sequence[int], *, rounds: int, top_k: int, budget_tokens: int,
                    cache_dir: Path, embedder: Embedder | None = None,
                    queries: Sequence[str] = QUERIES, embed_max: int = 2000,
                    store_max: int = 10000, console: Any = None,
                    retrieval: Retrieval = COSINE_ONLY, after_write: bool = True) -> dict[str, Any]:
    """The report: per size, p50/p95 (ms) of ours (and, with `after_write`, ours after one
    write), InMemoryStore (up to `store_max` memories) and the query embedding alone, with the
    p95 ratios; a progress bar of the seeding on `console` (when given)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if embedder is None:
        from streams.providers.embedders.minilm import LocalMiniLMEmbedder

        embedder = LocalMiniLMEmbedder()
    report: dict[str, Any] = {
        "embedder": embedder.profile.name, "queries": len(queries), "rounds": rounds,
        "top_k": top_k, "budget_tokens": budget_tokens, "embed_max": embed_max,
        "store_max": store_max, "retrieval": retrieval.mode, "fusion": retrieval.fusion, "sizes": {},
    }
    for n in sizes:
        with_store = n <= store_max
        embedded = min(n, max(embed_max, 1))
        started = time.perf_counter()
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, disable=console is None) as bar:
            making = bar.add_task(f"{n:,} memories: generating", total=n)
            memories = synthetic_memories(n)
            bar.update(making, completed=n)
            embedding = bar.add_task(f"{n:,} memories: embedding {embedded:,} documents", total=embedded)
            vectors = seed_vectors(memories, embedder, cache_dir, embed_max,
                                   lambda k: bar.advance(embedding, k))
            seeding = bar.add_task(f"{n:,} memories: seeding the index"
                                   + (" and InMemoryStore" if with_store else ""),
                                   total=n * (2 if with_store else 1))
            contenders = build(memories, vectors, embedder, top_k=top_k, budget_tokens=budget_tokens,
                               with_store=with_store, advance=lambda k: bar.advance(seeding, k),
                               retrieval=retrieval, after_write=after_write)
        seed_seconds = round(time.perf_counter() - started, 2)
        figures: dict[str, Any] = measure(contenders, queries, rounds)
        figures.setdefault("in_memory_store", None)
        figures.setdefault("ours_after_write", None)
        figures["p95_ratio_ours_to_store"] = (
            ratio(figures["ours"]["p95"], figures["in_memory_store"]["p95"]) if with_store else None)
        figures["p95_ratio_ours_to_embed"] = ratio(figures["ours"]["p95"], figures["embed_only"]["p95"])
        figures.setdefault("ours_dense", None)
        figures["p95_ratio_ours_dense_to_embed"] = (
            ratio(figures["ours_dense"]["p95"], figures["embed_only"]["p95"])
            if figures["ours_dense"] else None)
        figures["lexical_rebuild_ms"] = contenders.lexical_rebuild_ms
        figures["embedded_documents"] = embedded
        figures["seed_seconds"] = seed_seconds
        report["sizes"][str(n)] = figures
    return report


def render(report: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    how = report.get("retrieval", "dense") + (
        f" ({report.get('fusion')})" if report.get("retrieval") == "hybrid" else "")
    table = Table(title=f"memory.query latency (ms), {how}, {report['embedder']}, top_k={report['top_k']}, "
                        f"budget {report['budget_tokens']} tokens, {report['queries']} queries x "
                        f"{report['rounds']} rounds")
    for column in ("memories", "path", "p50", "p95", "mean", "ours p95 / this p95"):
        table.add_column(column, justify="left" if column in ("memories", "path") else "right")
    for n, figures in report["sizes"].items():
        for path in ("ours", "ours_after_write", "ours_dense", "in_memory_store", "embed_only",
                     "search_only"):
            f = figures.get(path)
            if f is None and path in ("search_only", "ours_dense", "ours_after_write"):
                continue
            name = {"ours": "memstream (filters, ranking, budget)",
                    "ours_after_write": "memstream, one memory written before each query",
                    "ours_dense": "memstream, dense retrieval",
                    "in_memory_store": "LangGraph InMemoryStore.search",
                    "embed_only": "query embedding alone",
                    "search_only": "memstream without the embedding"}[path]
            ratio_of = {"ours": "", "ours_after_write": "", "ours_dense": "",
                        "in_memory_store": figures.get("p95_ratio_ours_to_store"),
                        "embed_only": figures.get("p95_ratio_ours_to_embed"), "search_only": ""}[path]
            if f is None:
                table.add_row(f"{int(n):,}", name, "-", "-", "-",
                              f"not run above {report.get('store_max', 0):,} memories")
                continue
            table.add_row(f"{int(n):,}", name, f"{f['p50']:.2f}", f"{f['p95']:.2f}", f"{f['mean']:.2f}",
                          "" if ratio_of in ("", None) else f"{ratio_of:.2f}")
    table.caption = "seeding: " + "; ".join(
        f"{int(n):,} in {f['seed_seconds']} s ({f['embedded_documents']:,} documents embedded"
        + (", the rest derived)" if f["embedded_documents"] < int(n) else ")")
        for n, f in report["sizes"].items() if "seed_seconds" in f)
    console.print(table)
