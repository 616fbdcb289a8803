"""`memstream bench embedder`: texts/s of each embedder kind, side by side, and how far each
kind's vectors are from the fp32 reference (`local`).

The texts are LoCoMo turns (an even sample over the given files). Every kind is loaded first
(an ONNX kind makes its cached file then, if missing), then each round times every kind in turn
— the order rotating between rounds, so a neighbour's load on a shared machine falls on all of
them alike:

- batched: the sample in calls of `batch_size` texts (what the dedup stage hands the embedder);
- single: `single` texts, one call each (a query).

texts/s is reported as the median and the best of the rounds. Cosines compare each kind's
vectors of the whole sample with the reference's, row by row. Figures are measured, never
asserted.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from streams.tools.locomo import load_conversation
from streams.providers.embedders import PROFILES, Embedder, create_embedder

REFERENCE = "local"
KINDS = tuple(PROFILES)


def turn_texts(files: Sequence[Path], n: int) -> list[str]:
    """`n` turn texts spread evenly over the conversations of `files` (all when fewer)."""
    texts = [t.text for path in files for t in load_conversation(path).turns]
    if n >= len(texts):
        return texts
    step = len(texts) / n
    return [texts[int(i * step)] for i in range(n)]


def batched(embedder: Embedder, texts: Sequence[str], batch_size: int) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    rows = [embedder.embed(list(texts[i:i + batch_size])) for i in range(0, len(texts), batch_size)]
    return time.perf_counter() - started, np.vstack(rows)


def one_at_a_time(embedder: Embedder, texts: Sequence[str]) -> float:
    started = time.perf_counter()
    for text in texts:
        embedder.embed([text])
    return time.perf_counter() - started


def run_embedder_bench(files: Sequence[Path], kinds: Sequence[str] = KINDS, *, texts: int = 512,
                       single: int = 64, rounds: int = 3, batch_size: int = 32,
                       cache_dir: Path | None = None, console: Console | None = None) -> dict[str, Any]:
    """The report: per kind, load seconds, batched and single texts/s (median, best), speedup
    over the reference and cosine to its vectors (mean, min)."""
    say = console.print if console else (lambda *_: None)
    kinds = list(dict.fromkeys([REFERENCE, *kinds]))
    sample = turn_texts(files, texts)
    singles = sample[:single]
    embedders: dict[str, Embedder] = {}
    loads: dict[str, float] = {}
    for kind in kinds:
        say(f"loading {kind} ...")
        started = time.perf_counter()
        embedders[kind] = create_embedder(kind, batch_size, cache_dir)
        loads[kind] = time.perf_counter() - started
        embedders[kind].embed(sample[:batch_size])  # warm-up: first-call allocations
    batch_s: dict[str, list[float]] = {k: [] for k in kinds}
    single_s: dict[str, list[float]] = {k: [] for k in kinds}
    vectors: dict[str, np.ndarray] = {}
    for r in range(rounds):
        order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
        say(f"round {r + 1}/{rounds}: {', '.join(order)}")
        for kind in order:
            seconds, vectors[kind] = batched(embedders[kind], sample, batch_size)
            batch_s[kind].append(seconds)
            single_s[kind].append(one_at_a_time(embedders[kind], singles))
    reference = vectors[REFERENCE]
    report: dict[str, Any] = {"texts": len(sample), "single_texts": len(singles), "rounds": rounds,
                              "batch_size": batch_size, "reference": REFERENCE, "kinds": {}}
    for kind in kinds:
        cosines = np.sum(vectors[kind] * reference, axis=1)
        batch_rates = [len(sample) / s for s in batch_s[kind]]
        single_rates = [len(singles) / s for s in single_s[kind]]
        report["kinds"][kind] = {
            "model": embedders[kind].profile.name,
            "load_s": round(loads[kind], 2),
            "batched_texts_per_s": {"median": round(statistics.median(batch_rates), 1),
                                    "best": round(max(batch_rates), 1)},
            "single_texts_per_s": {"median": round(statistics.median(single_rates), 1),
                                   "best": round(max(single_rates), 1)},
            "cosine_to_reference": {"mean": round(float(cosines.mean()), 5),
                                    "min": round(float(cosines.min()), 5)},
        }
    ref = report["kinds"][REFERENCE]
    for figures in report["kinds"].values():
        figures["speedup"] = {
            mode: round(figures[f"{mode}_texts_per_s"]["median"] / ref[f"{mode}_texts_per_s"]["median"], 2)
            for mode in ("batched", "single")
        }
    return report


def render(report: dict[str, Any], console: Console) -> None:
    table = Table(title=f"embedders on {report['texts']} LoCoMo turns (batches of "
                        f"{report['batch_size']}; {report['single_texts']} one at a time; "
                        f"{report['rounds']} rounds, median / best)")
    for column in ("kind", "load s", "batched texts/s", "single texts/s", "speedup b / s",
                   f"cosine to {report['reference']} mean / min"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    for kind, f in report["kinds"].items():
        b, s, c = f["batched_texts_per_s"], f["single_texts_per_s"], f["cosine_to_reference"]
        table.add_row(kind, f"{f['load_s']:.1f}", f"{b['median']} / {b['best']}",
                      f"{s['median']} / {s['best']}",
                      f"{f['speedup']['batched']:.2f}x / {f['speedup']['single']:.2f}x",
                      f"{c['mean']:.4f} / {c['min']:.4f}")
    console.print(table)
