"""What the LLM path is worth, measured (`memstream bench locomo --offline --llm`, issue 51 item 4).

The same LoCoMo turns go through the worker's stages in process twice in one run: once with rules
only (`LLM_PROVIDER=none`), once with the configured LLM (or a local llama.cpp server with
SmolLM2-135M, `--local-llm`). Beside each other: recall_any and recall_all at 5/10/20, what was
stored (facts per turn, the writing-constraint pass rate and precision against the gold
observations: the extraction fidelity figures), and for the LLM side the share of calls that fell
back to the rules, LLM tokens in and out per turn, and the LLM's seconds per turn.

`max_turns` cuts each conversation to its first turns (a CPU model takes seconds a call), and
only the questions whose evidence lies in them are asked. `ingest_batch` hands ingest that many
turns at a time, as a worker takes them from a backlog (a conversation imported, a worker behind):
the LLM is then asked about a thread's turns together (`LLM_BATCH_TURNS` a call); by default
each turn is ingested alone, as in a live chat, a call a turn.

Tokens per turn are every LLM call's prompt and completion tokens as the server counted them
(`memstream_llm_tokens_total`, every task), divided by the turns replayed.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.bench import _ask_questions, _offline_recall, stored_quality
from benchmarks.recall import KS, dia_id_of
from streams.observability.metrics import REGISTRY
from streams.providers.llm.base import Task
from streams.settings import Settings, get_settings
from streams.tools.locomo import LocomoConversation, load_conversation
from topics import names
from topics.turns import Turn

TASKS = tuple(task.value for task in Task)
"""Every task's calls are counted (with the lifecycle off, only the write path's make any)."""
BATCHED = ("trigger", "extract")
"""The tasks asked about several turns a call: their fallback share is per turn asked."""


def cut(conversation: LocomoConversation, max_turns: int | None) -> LocomoConversation:
    """The conversation's first `max_turns` turns, and the questions answerable from them."""
    if max_turns is None or max_turns >= len(conversation.turns):
        return conversation
    turns = conversation.turns[:max_turns]
    kept = {dia_id_of(f"{t.thread_id}:{t.turn_id}") for t in turns}
    questions = [q for q in conversation.questions if q.evidence and set(q.evidence) <= kept]
    return dataclasses.replace(conversation, turns=turns, questions=questions)


def _sum(name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include `labels` (0 when none)."""
    total = 0.0
    for metric in REGISTRY.collect():
        for s in metric.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


def llm_counters() -> dict[str, float]:
    """The LLM counters this bench reads, summed over providers."""
    out: dict[str, float] = {}
    for task in TASKS:
        for outcome in ("ok", "fallback"):
            out[f"{task}.{outcome}"] = _sum("memstream_llm_calls_total", task=task, outcome=outcome)
            out[f"{task}.turns_{outcome}"] = _sum("memstream_llm_turns_total", task=task, outcome=outcome)
        out[f"{task}.fallbacks"] = _sum("memstream_llm_fallbacks_total", task=task)
        for direction in ("in", "out"):
            out[f"{task}.tokens_{direction}"] = _sum("memstream_llm_tokens_total", task=task,
                                                     direction=direction)
        out[f"{task}.seconds"] = _sum("memstream_llm_call_duration_seconds_sum", task=task)
    return out


def llm_figures(before: dict[str, float], after: dict[str, float], turns: int) -> dict[str, Any]:
    """Per task: calls, turns asked (trigger and extraction), the share of answers that fell back
    to the rules (per turn asked for those two, per call for the others), tokens in and out per
    turn, LLM seconds per turn."""
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    figures: dict[str, Any] = {}
    for task in TASKS:
        calls = delta[f"{task}.ok"] + delta[f"{task}.fallback"]
        asked = delta[f"{task}.turns_ok"] + delta[f"{task}.turns_fallback"] if task in BATCHED else calls
        figures[task] = {
            "calls": int(calls),
            **({"turns_asked": int(asked)} if task in BATCHED else {}),
            "fallback_share": round(delta[f"{task}.fallbacks"] / asked, 4) if asked else None,
            "tokens_in_per_turn": round(delta[f"{task}.tokens_in"] / max(turns, 1), 1),
            "tokens_out_per_turn": round(delta[f"{task}.tokens_out"] / max(turns, 1), 1),
            "llm_seconds_per_turn": round(delta[f"{task}.seconds"] / max(turns, 1), 3),
        }
    figures["tokens_per_turn"] = round(sum(
        figures[t]["tokens_in_per_turn"] + figures[t]["tokens_out_per_turn"] for t in TASKS), 1)
    return figures


async def ingest_in_batches(pipeline: Any, turns: list[Turn], size: int) -> None:
    """`turns` through the in-process stages `size` at a time, as ingest takes a backlog
    (`IngestStage.handle_batch`), what each batch produces delivered before the next."""
    queue = pipeline.topics.queues[names.CHAT_TURNS]
    for at in range(0, len(turns), size):
        for turn in turns[at:at + size]:
            await pipeline.send_turn(turn)
        await pipeline.ingest_records([queue.popleft() for _ in range(len(queue))])
        await pipeline.deliver(flush=False)
    await pipeline.deliver()


def one_side(settings: Settings, conversations: list[LocomoConversation], files: list[Path],
             embedder: Any, ingest_batch: int = 1) -> dict[str, Any]:
    """Recall and what was stored, for one setting of the LLM, on a fresh in-process pipeline
    (turns ingested `ingest_batch` at a time)."""
    from streams.app.inprocess import InProcessPipeline

    pipeline = InProcessPipeline(settings, embedder)
    turns = [t for c in conversations for t in c.turns]
    before = llm_counters()

    async def run() -> Any:
        try:
            if ingest_batch <= 1:
                return (await _offline_recall(pipeline, conversations, turns))[0]
            await ingest_in_batches(pipeline, turns, ingest_batch)
            return await _ask_questions(pipeline, conversations)
        finally:
            await pipeline.services.llm.aclose()

    started = time.perf_counter()
    report = asyncio.run(run())
    seconds = time.perf_counter() - started
    summaries: dict[tuple[str, str], list[str]] = {}
    for conv in conversations:
        for m in pipeline.store.user_memories(conv.user_id):
            if m.is_visible:
                summaries.setdefault((conv.user_id, m.type), []).append(m.summary)
    candidates = sum(pipeline.outcomes().values())
    return {
        **report.as_dict(),
        **stored_quality(summaries, conversations, files, embedder),
        "facts_per_turn": round(candidates / max(len(turns), 1), 4),
        "memories_stored": sum(len(v) for v in summaries.values()),
        "seconds_per_turn": round(seconds / max(len(turns), 1), 3),
        **({"llm": llm_figures(before, llm_counters(), len(turns))}
           if settings.llm.llm_provider != "none" else {}),
    }


@contextmanager
def local_server() -> Iterator[dict[str, Any]]:
    """The settings of a local llama.cpp server with SmolLM2-135M, running for the `with`."""
    from streams.tools.local_llm import model_path, serve, server_python

    python = server_python()
    with serve(python, model_path(python)) as server:
        yield {"llm_provider": "openai", "openai_base_url": server.base_url, "llm_model": server.model}


def run_llm_bench(files: list[Path], console: Console, *, local: bool = False,
                  max_turns: int | None = None, ingest_batch: int = 1) -> dict[str, Any]:
    """Rules alone and the LLM path on the same turns, in one run (see the module doc)."""
    from streams.app.services import settings_embedder

    base = get_settings().with_values(lifecycle_enabled=False)
    embedder = settings_embedder(base)
    conversations = [cut(load_conversation(p), max_turns) for p in files]
    with local_server() if local else nullcontext({}) as llm_values:
        llm = base.with_values(**llm_values)
        if llm.llm.llm_provider in ("none", "auto") and not llm_values:
            raise SystemExit("--llm needs LLM_PROVIDER set to anthropic, bedrock or openai "
                             "(docs/llm.md), or --local-llm")
        console.print(f"rules: {sum(len(c.turns) for c in conversations)} turns ...")
        rules = one_side(base.with_values(llm_provider="none"), conversations, files, embedder,
                         ingest_batch)
        console.print(f"LLM ({llm.llm.llm_provider}, {llm.llm.llm_mode}) ...")
        with_llm = one_side(llm, conversations, files, embedder, ingest_batch)
    return {"mode": "offline-llm", "files": [str(p) for p in files], "max_turns": max_turns,
            "ingest_batch": ingest_batch, "llm_batch_turns": llm.llm.llm_batch_turns,
            "llm_extraction": llm.llm.llm_extraction if llm.llm.llm_mode == "hybrid" else "inline",
            "llm_window_seconds": llm.llm.llm_window_seconds,
            "turns": sum(len(c.turns) for c in conversations),
            "questions": sum(len(c.scored_questions) for c in conversations),
            "llm_provider": llm.llm.llm_provider, "llm_mode": llm.llm.llm_mode,
            "llm_model": llm_values.get("llm_model") or llm.llm.llm_model,
            "rules": rules, "llm": with_llm}


def render_llm_report(report: dict[str, Any], console: Console) -> None:
    """The LLM-vs-rules table."""
    table = Table(title=f"LLM vs rules — {report['turns']} turns, {report['questions']} questions "
                        f"({report['llm_provider']}, {report['llm_mode']}, "
                        f"{report.get('llm_extraction', 'inline')}, ingest batch "
                        f"{report.get('ingest_batch', 1)})")
    table.add_column("figure")
    table.add_column("rules", justify="right")
    table.add_column("LLM", justify="right")
    rules, llm = report["rules"], report["llm"]
    for kind in ("recall_any", "recall_all"):
        for k in KS:
            table.add_row(f"{kind}@{k}", f"{rules[kind][k]:.3f}", f"{llm[kind][k]:.3f}")
    for key in ("facts_per_turn", "memories_stored", "writing_pass_rate", "seconds_per_turn"):
        table.add_row(key, str(rules[key]), str(llm[key]))
    table.add_row("precision_against_gold", str(rules["precision_against_gold"]),
                  str(llm["precision_against_gold"]))
    figures = llm.get("llm", {})
    for task in TASKS:
        for key, value in figures.get(task, {}).items():
            table.add_row(f"{task} {key}", "", str(value))
    table.add_row("LLM tokens per turn", "", str(figures.get("tokens_per_turn")))
    console.print(table)
