"""`memstream bench …`: the benches, which live outside the service package (benchmarks/, in
the source checkout; not in the wheel).

Nothing here imports `benchmarks` at module level: `memstream --help` and the worker never load
it; each command imports its bench when it runs, after `require_benches`.
"""
from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from streams.settings import get_settings
from streams.cli.common import ApiOpt, JsonOpt, console

bench_app = typer.Typer(help="Benchmarks that replay data sets through the running pipeline.")
Mem0PythonOpt = Annotated[Optional[str], typer.Option(
    "--mem0-python", envvar="MEM0_PYTHON",
    help="Python of the venv holding mem0 (the `baselines` extra; default .mem0-venv/bin/python when present, else this one).")]
Mem0ThreadsOpt = Annotated[int, typer.Option(
    "--mem0-torch-threads", help="torch intra-op threads in mem0's process (0: torch's default, as mem0 runs out of the box).")]

BENCH_PACKAGE = "benchmarks"
NOT_IN_THE_WHEEL = ("memstream bench runs from a source checkout: the benches (benchmarks/) are not "
                    "in the wheel; run it there (./dev memstream bench …)")


def require_benches() -> None:
    """Exit 2 with one line when the bench package cannot be imported (an installed wheel
    outside the checkout); `./dev setup` makes the checkout's importable in .venv."""
    if importlib.util.find_spec(BENCH_PACKAGE) is None:
        typer.echo(NOT_IN_THE_WHEEL, err=True)
        raise typer.Exit(2)


def _show(report: dict[str, Any], as_json: bool, render: Callable[[dict[str, Any], Console], None]) -> None:
    """A bench report as JSON on stdout (`--json`), else as `render`'s tables."""
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        render(report, Console())


@bench_app.command("locomo")
def bench_locomo(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files (any, by path).", exists=True, dir_okay=False)],
    as_json: JsonOpt = False,
    broker: Annotated[Optional[str], typer.Option(help="Use this broker and a running worker instead of starting a fresh embedded stack.")] = None,
    api: ApiOpt = None,
    partitions: Annotated[int, typer.Option(help="Partitions of the fresh stack's topics.")] = 4,
    rate: Annotated[float, typer.Option(help="Produce turns at this rate (turns/s); 0 = all at once, which measures backlog drain rather than per-turn latency.")] = 0.0,
    offline: Annotated[bool, typer.Option(help="Run the stages in this process without Kafka: recall only, in seconds (for tuning extraction).")] = False,
    baseline: Annotated[Optional[str], typer.Option(help="Also run this baseline on the same turns after the run, in the same command: mem0 (its add(infer=False); see `bench mem0`).")] = None,
    mem0_python: Mem0PythonOpt = None,
    mem0_torch_threads: Mem0ThreadsOpt = 0,
    cross_validate: Annotated[bool, typer.Option("--cross-validate", help="Also report recall per half of the conversations (first half, second half), per LoCoMo question category, and each half's gap to the other as development/held-out split.")] = False,
    lifecycle: Annotated[bool, typer.Option("--lifecycle/--no-lifecycle", help="Run the lifecycle (forgetting, consolidation, promotion) during the replay, as a worker does by default; --no-lifecycle is the opt-out (a fresh stack only: a running worker does as it is configured).")] = True,
    live_queries: Annotated[bool, typer.Option("--live-queries", help="Also replay the conversations as a chat backend runs them, reading memory (MEMORY_K items, the turn's text as the query, recorded as a read) before every turn, and report that recall beside the plain replay's.")] = False,
    plot: Annotated[Optional[Path], typer.Option(help="Write the reliability diagram of the items' scores (share holding evidence per score bucket) as PNG here.")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Workers the fresh stack starts (one consumer group; each its own port and data dir). The report's scale_out gives each one's partitions, turns and cores.")] = 1,
    users_per_file: Annotated[int, typer.Option(min=1, help="Replay each file under this many user ids, spread over the partitions, so every partition (and worker) has work; recall is scored on every copy.")] = 1,
    single_worker_rate: Annotated[Optional[float], typer.Option(help="One worker's turns/s on the same turns and machine (e.g. from a --workers 1 run): scale_out.scaling_efficiency = turns/s / (workers x this).")] = None,
    scaling: Annotated[bool, typer.Option("--scaling", help="Measure the one-worker figure too: after the run, a fresh stack with one worker drains the same turns, and scaling_efficiency compares with it.")] = False,
    broker_storage: Annotated[str, typer.Option(help="Where the fresh stack's embedded broker keeps its topics: disk (the default of `memstream run`, in the run's work directory) or memory (Tansu's own, the opt-out).")] = "disk",
    profile_cpu: Annotated[Optional[Path], typer.Option("--profile-cpu", help="Profile each worker's event loop by its CPU clock while the turns drain (cProfile; the profiler about triples the loop's CPU, so read shares), write worker.prof (worker-i.prof) into this directory, and report the largest functions as cpu_profile.", file_okay=False)] = None,
    llm: Annotated[bool, typer.Option("--llm", help="In process, run the turns twice: rules alone and with the configured LLM (LLM_PROVIDER; docs/llm.md), and report recall, facts per turn, stored quality, the share of LLM calls that fell back, LLM tokens and seconds per turn side by side.")] = False,
    local_llm: Annotated[bool, typer.Option("--local-llm", help="With --llm: start a local llama.cpp server with SmolLM2-135M (`./dev local-llm` builds it once) and use it as the LLM.")] = False,
    max_turns: Annotated[Optional[int], typer.Option(min=1, help="With --llm: only each conversation's first turns, and the questions answerable from them (a CPU model takes seconds a call).")] = None,
    ingest_batch: Annotated[int, typer.Option(min=1, help="With --llm: hand ingest this many turns at a time, as a worker takes a backlog, so the LLM is asked about a thread's turns together (LLM_BATCH_TURNS a call); 1 (default): a turn at a time, as in a live chat.")] = 1,
) -> None:
    """Replay LoCoMo conversations through the pipeline and report throughput, latency and recall.

    Prints, in one run: ingest turns/s beside the broker's raw produce->consume rate, end-to-end
    and candidate latency p50/p95/p99, per-stage queued and work time p50/p95, the embedder's
    limit alone (turns/s), the worker's RSS per stored memory, query latency p50/p95,
    recall_any/all@5/10/20 with context size, and the same recall for a raw-turn baseline with
    the same embedder; CPU per turn (the model's apart), Kafka records and bytes per turn per
    topic, and per worker its partitions, turns and cores (scale_out; see docs/capacity.md).
    """
    require_benches()
    from benchmarks.bench import render_report, run_locomo_bench, run_offline_bench

    if llm or local_llm:
        from benchmarks.bench_llm import render_llm_report, run_llm_bench

        _show(run_llm_bench(files, console, local=local_llm, max_turns=max_turns,
                            ingest_batch=ingest_batch), as_json, render_llm_report)
        return

    python = _mem0_ready(mem0_python) if baseline is not None else None
    if baseline not in (None, "mem0"):
        console.print(f"unknown baseline {baseline!r}; known: mem0")
        raise typer.Exit(2)
    if cross_validate and len(files) < 2:
        console.print("--cross-validate needs at least two conversation files (one per half)")
        raise typer.Exit(2)
    if cross_validate and users_per_file > 1:
        console.print("--cross-validate splits files into halves: use it with --users-per-file 1")
        raise typer.Exit(2)
    if (workers > 1 or scaling or profile_cpu is not None) and (broker or offline):
        console.print("--workers, --scaling and --profile-cpu start a fresh stack: not with --broker or --offline")
        raise typer.Exit(2)
    if broker_storage not in ("disk", "memory"):
        console.print(f"unknown --broker-storage {broker_storage!r}; known: disk, memory")
        raise typer.Exit(2)
    if profile_cpu is not None:
        profile_cpu.mkdir(parents=True, exist_ok=True)
    if offline:
        report = run_offline_bench(files, console, cross_validated=cross_validate,
                                   lifecycle=lifecycle, live_queries=live_queries,
                                   plot_path=plot)
    else:
        report = run_locomo_bench(files, broker=broker, api=api, partitions=partitions,
                                  console=console, rate=rate, cross_validated=cross_validate,
                                  lifecycle=lifecycle, live_queries=live_queries, plot_path=plot,
                                  workers=workers, users_per_file=users_per_file,
                                  single_worker_rate=single_worker_rate, scaling=scaling,
                                  profile_dir=profile_cpu, broker_storage=broker_storage)
    if python is not None:
        from benchmarks.bench_mem0 import Mem0RunFailed, attach_mem0
        from streams.tools.locomo import load_conversation

        try:
            attach_mem0(report, [load_conversation(p) for p in files], python, console,
                        mem0_torch_threads)
        except Mem0RunFailed as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(1)
    _show(report, as_json, render_report)


@bench_app.command("query")
def bench_query(
    memories: Annotated[list[int], typer.Option("--memories", help="Memories of the one user (repeatable).")] = [1000, 10000, 100000],
    rounds: Annotated[int, typer.Option(help="Passes over the query set.")] = 5,
    top_k: Annotated[int, typer.Option(help="Items per query.")] = 5,
    budget_tokens: Annotated[int, typer.Option(help="Token budget of our answers.")] = 256,
    embed_max: Annotated[int, typer.Option(help="Documents embedded with the model (cached); the vectors of the others are derived from theirs.")] = 2000,
    store_max: Annotated[int, typer.Option(help="Largest size at which InMemoryStore is compared (its search is a Python loop).")] = 10000,
    after_write: Annotated[bool, typer.Option("--after-write/--no-after-write", help="Also time ours with one memory written before each query (ours_after_write), as in a live chat.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """memory.query p50/p95 at N memories beside the query embedding alone (and the p95 ratio)
    and LangGraph's InMemoryStore (the worker's embedder, EMBEDDER, for all; same queries, same
    run); with RETRIEVAL_MODE=hybrid, dense retrieval beside it and the BM25 scores' time from
    a fresh index and after one change; ours with one memory written before each query too
    (--after-write). Memories are seeded in process, in bulk; document embeddings are cached under
    DATA_DIR."""
    require_benches()
    from streams.app.services import settings_embedder
    from benchmarks.bench_query import render, run_query_bench
    from streams.read.fusion import Retrieval

    settings = get_settings()
    report = run_query_bench(memories, rounds=rounds, top_k=top_k, budget_tokens=budget_tokens,
                             cache_dir=settings.kafka.data_dir / "bench-cache",
                             embedder=settings_embedder(settings),  # the worker's (EMBEDDER)
                             embed_max=embed_max, store_max=store_max, console=console,
                             retrieval=Retrieval.of(settings.read), after_write=after_write)
    _show(report, as_json, render)


@bench_app.command("rebuild")
def bench_rebuild(
    memories: Annotated[int, typer.Option(help="Memories in the table.")] = 1_000_000,
    users: Annotated[int, typer.Option(help="Users they belong to.")] = 2000,
    as_json: JsonOpt = False,
) -> None:
    """Rebuilding the vector index of N memories (what a worker does after a rebalance): the
    time in one go, the time in slices and the longest the event loop was held meanwhile
    (heartbeats run on it), and the RAM the index adds per memory. In process."""
    require_benches()
    from benchmarks.bench_rebuild import render, run_rebuild_bench

    report = run_rebuild_bench(memories, users)
    _show(report, as_json, render)


@bench_app.command("restart")
def bench_restart(
    memories: Annotated[int, typer.Option(min=0, help="Memories the stack holds when it restarts.")] = 100_000,
    users: Annotated[int, typer.Option(min=1, help="Users they belong to (memory i is user i mod U's).")] = 200,
    base_cost: Annotated[bool, typer.Option("--base-cost/--no-base-cost", help="Also restart a fresh stack holding nothing: the cost of a start itself (imports, Faust, the group join, the model).")] = True,
    rebuild: Annotated[bool, typer.Option("--rebuild/--no-rebuild", help="Also time the index rebuild alone on the same N and U (bench rebuild's), and the ratio.")] = True,
    lifecycle: Annotated[bool, typer.Option("--lifecycle/--no-lifecycle", help="The worker runs the lifecycle, as it does by default.")] = True,
    keep: Annotated[Optional[Path], typer.Option(help="Keep the stacks' directories (broker store, tables, each start's worker log, the master and admin keys) here instead of deleting them.", file_okay=False)] = None,
    start_timeout: Annotated[float, typer.Option(min=1, help="Seconds a start may take to serve before it is reported as not ready.")] = 600.0,
    as_json: JsonOpt = False,
) -> None:
    """How long a worker holding N memories takes to serve again after a restart, beside
    rebuilding its index alone.

    Starts a fresh embedded broker on disk and one worker (its own DATA_DIR and master key),
    fills it with N memories of U users (sealed candidates that carry their vectors, so no
    model time per memory; every one created), then, on the same broker store and tables:
    stops both cleanly (SIGTERM) and starts them again, then kills worker, broker and object
    store (kill -9) and starts them again. For each start it reports the seconds from the start
    command to /health ready and to the first query answered (a query needs the index: ready
    to serve), the worker log's milestones (imports done, group joined, model loaded, index
    rebuilt) and whether every memory is there. Beside them: the index rebuild alone for the
    same N and U (in process, as `bench rebuild`), the ratio restart → first query ÷ rebuild
    (the goal: at most 2), the disk the broker store and the tables take, the fill's
    memories/s and, with --base-cost, the same restart of an empty stack.
    """
    require_benches()
    from benchmarks.bench_restart import render, run_restart_bench

    report = run_restart_bench(memories, users, console, base_cost=base_cost, rebuild=rebuild,
                               lifecycle=lifecycle, workdir=keep, start_timeout=start_timeout)
    _show(report, as_json, render)


@bench_app.command("tables")
def bench_tables(
    databases: Annotated[int, typer.Option(help="Databases (a worker: 11 tables × the partitions it holds).")] = 44,
    megabytes: Annotated[int, typer.Option("--mb", help="MB written to each database.")] = 16,
    keys: Annotated[int, typer.Option(help="Keys each database's writes go over (rewrites of the same records).")] = 500,
    memory_mb: Annotated[Optional[int], typer.Option(help="memstream's TABLE_MEMORY_MB (default: the setting).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """What RocksDB keeps in memory when tables are written steadily: Faust's own options against
    memstream's shared budget (`TABLE_MEMORY_MB`), each in a fresh process. In process, no broker."""
    require_benches()
    from benchmarks.bench_tables import render, run_tables_bench

    budget = memory_mb if memory_mb is not None else get_settings().kafka.table_memory_mb
    with console.status(f"writing {databases} × {megabytes} MB with each side's options …"):
        report = run_tables_bench(databases, megabytes, keys, budget)
    _show(report, as_json, render)


@bench_app.command("embedder")
def bench_embedder(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files: their turns are the texts.", exists=True, dir_okay=False)],
    kinds: Annotated[list[str], typer.Option("--kind", help="Embedder kinds (repeatable); local, the reference, always runs.")] = ["local", "local-onnx", "local-int8"],
    texts: Annotated[int, typer.Option(help="Turn texts embedded in batches per round.")] = 512,
    single: Annotated[int, typer.Option(help="Of them, texts embedded one at a time per round.")] = 64,
    rounds: Annotated[int, typer.Option(help="Rounds; every kind runs once per round.")] = 3,
    as_json: JsonOpt = False,
) -> None:
    """texts/s of each embedder kind side by side (batched and one at a time), and the cosine
    of its vectors to the fp32 reference's. ONNX files are cached under EMBEDDER_CACHE_DIR."""
    require_benches()
    from streams.app.services import models_dir
    from benchmarks.bench_embedder import render, run_embedder_bench

    s = get_settings()
    report = run_embedder_bench(files, kinds, texts=texts, single=single, rounds=rounds,
                                batch_size=s.embedding.embed_batch_size, cache_dir=models_dir(s),
                                console=console)
    _show(report, as_json, render)


def _mem0_ready(explicit: str | None) -> str:
    """The mem0 interpreter, checked before any long run; exits 2 with how to install it."""
    from benchmarks.bench_mem0 import Mem0NotInstalled, check_mem0, mem0_python

    python = mem0_python(explicit)
    try:
        check_mem0(python)
    except Mem0NotInstalled as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2)
    return python


@bench_app.command("mem0")
def bench_mem0(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files: every turn is stored.", exists=True, dir_okay=False)],
    mem0_python: Mem0PythonOpt = None,
    mem0_torch_threads: Mem0ThreadsOpt = 0,
    kinds: Annotated[list[str], typer.Option("--kind", help="memstream embedder kinds timed alone (repeatable; default: EMBEDDER).")] = [],
    as_json: JsonOpt = False,
) -> None:
    """mem0's Memory.add(infer=False), one call per turn, beside memstream's embedder alone on
    the same texts (EMBEDDER or --kind, batches of DEDUP_BATCH_SIZE), in one run. mem0 runs in its own
    venv (it needs protobuf < 7; the lock pins 7.x) with the same MiniLM files, offline."""
    require_benches()
    from benchmarks.bench_mem0 import Mem0RunFailed, render, run_mem0_bench
    from streams.tools.locomo import load_conversation

    python = _mem0_ready(mem0_python)
    try:
        report = run_mem0_bench([load_conversation(p) for p in files], python, console, kinds,
                                mem0_torch_threads)
    except Mem0RunFailed as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1)
    _show(report, as_json, render)


@bench_app.command("details")
def bench_details(
    as_json: JsonOpt = False,
    labelled: Annotated[Path, typer.Option(help="JSON lines {id, kind, speaker, text, details, holdout} of first-person sentences and the details their memory must keep.", exists=True, dir_okay=False)] = Path("tests/data/details/sentences.jsonl"),
    locomo: Annotated[Optional[list[Path]], typer.Option("--locomo", help="Also time the sentence splitter on these LoCoMo conversations' turns.", exists=True, dir_okay=False)] = None,
) -> None:
    """Details kept: each labelled sentence a turn of its own user through the write path in
    process (the rules, no LLM); detail recall and the share of sentences kept whole per kind,
    and the sentence splitter's accuracy and cost per turn."""
    require_benches()
    from benchmarks.bench_details import render, run_details_bench

    _show(run_details_bench(labelled, locomo or ()), as_json, render)


@bench_app.command("combining")
def bench_combining(
    as_json: JsonOpt = False,
    labelled: Annotated[Path, typer.Option(help="Folder of chat histories with labelled combining questions (one JSON file per user; tests/data/combining/README.md).", exists=True, file_okay=False)] = Path("tests/data/combining"),
) -> None:
    """Questions that need several memories (both, count, before/after, changed): the labelled
    histories through the worker's stages in process with the defaults, every question asked
    with top_k 10; recall_any/all@5/10 per kind and the questions whose evidence is not all in
    the top 10."""
    require_benches()
    from benchmarks.combining import render, run_combining

    _show(run_combining(labelled, console), as_json, render)


@bench_app.command("ceilings")
def bench_ceilings(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files (any, by path).", exists=True, dir_okay=False)],
    as_json: JsonOpt = False,
) -> None:
    """How far a read path can go on the memories as written: LoCoMo through the worker's
    stages in process with the defaults, every question asked as the defaults ask it, with its
    evidence turns as its parts (a perfect model's searches), with the top 100 reordered
    evidence first (a perfect reranker), and on a replay with the lifecycle off; and how many
    questions have all their evidence stored at all."""
    require_benches()
    from benchmarks.ceilings import render, run_ceilings

    _show(run_ceilings(files, console), as_json, render)


@bench_app.command("policy")
def bench_policy(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files: real turns that must pass.", exists=True, dir_okay=False)],
    corpus: Annotated[Path, typer.Option(help="JSON lines {text, kind} of chat lines carrying secrets.", exists=True, dir_okay=False)] = Path("tests/data/secrets_corpus.jsonl"),
) -> None:
    """Safety policy: block rate on a secrets corpus and false-positive rate on real turns."""
    require_benches()
    from benchmarks.policy_report import policy_report

    print(json.dumps(policy_report(corpus, files, get_settings()), indent=2))


@bench_app.command("client")
def bench_client(
    files: Annotated[list[Path], typer.Argument(help="LoCoMo conversation files: their turns are sent.", exists=True, dir_okay=False)],
    rate: Annotated[float, typer.Option(min=0.1, help="Turns a second, each a send_turn(wait=True) of its own.")] = 20.0,
    users: Annotated[int, typer.Option(min=1, help="User ids the turns are spread over (as a backend's users).")] = 20,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Send only the first N turns.")] = 400,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds a turn may take to be applied before it counts as not applied in time.")] = 60.0,
    broker: Annotated[Optional[str], typer.Option(help="Use this broker and the worker at --api instead of a fresh embedded stack.")] = None,
    api: ApiOpt = None,
    partitions: Annotated[int, typer.Option(help="Partitions of the fresh stack's topics.")] = 4,
    read_back: Annotated[bool, typer.Option("--read-back/--no-read-back", help="Read back the memories each turn made (through the API); without, the wait on memory.progress alone.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Read-your-writes: p50/p95/p99 from send_turn(wait=True) to the memories it returns, at a
    steady rate, against a fresh embedded stack (or a running one)."""
    require_benches()
    from benchmarks.bench_client import render, run_client_bench

    api_key = None
    if broker is not None:
        from streams.api.auth import client_key

        api_key = client_key(get_settings())
    report = run_client_bench(files, rate=rate, users=users, limit=limit, timeout=timeout,
                              broker=broker, api=api, api_key=api_key, partitions=partitions,
                              read_back=read_back, console=console)
    _show(report, as_json, render)
