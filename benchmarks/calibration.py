"""Dedup band calibration (docs/architecture.md#write-path, seed 002; issue 4 item 1).

The cosine scale of a local model differs from Titan's, so the bands of an `EmbedderProfile`
are chosen on a labelled set of summary pairs (`tests/data/same_fact_pairs.jsonl`): each pair
is an existing memory `a`, a candidate `b`, and whether they state the *same fact*
(`same: true` — a paraphrase or a repeat in other words) or not (a changed value, which must
supersede; a different fact on the same topic; an unrelated fact).

The real decision code is measured: `streams.memory.dedup.decide` with `a` as the only neighbour of
`b`, at the pair's cosine. "Same fact" predicted = `Action.update`; `supersede` and `create`
are both "not the same fact". Precision and recall of "same fact" are reported at the
profile's bands and over a sweep of candidate `(auto, check_low)` bands.

    EMBEDDER=local-int8 python -m benchmarks.calibration [tests/data/same_fact_pairs.jsonl]
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from streams.memory.dedup import Action, decide
from streams.providers.embedders import EmbedderProfile
from streams.memory.model import Memory

DEFAULT_PAIRS = Path(__file__).resolve().parents[1] / "tests" / "data" / "same_fact_pairs.jsonl"
_T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

Embed = Callable[[Sequence[str]], np.ndarray]
Entities = Callable[[str], Sequence[str]]


@dataclass(frozen=True)
class Pair:
    """One labelled pair: existing memory `a`, candidate `b`, same fact or not, and its kind."""

    a: str
    b: str
    same: bool
    kind: str = ""
    set: str = ""  # which labelling round wrote it ("" the first; "issue13" the paraphrase round)


def as_pair(item: Pair | Mapping[str, Any]) -> Pair:
    if isinstance(item, Pair):
        return item
    return Pair(str(item["a"]), str(item["b"]), bool(item["same"]), str(item.get("kind", "")),
                str(item.get("set", "")))


def load_pairs(path: str | Path = DEFAULT_PAIRS) -> list[Pair]:
    """The pairs of a JSONL file (`{"a", "b", "same", "kind"}` per line; blank lines skipped)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [as_pair(json.loads(line)) for line in lines if line.strip()]


def no_entities(summary: str) -> Sequence[str]:
    """No declared entities: `dedup` falls back to the capitalised words past the first."""
    return ()


_NAME = re.compile(r"\b[A-Z][a-zA-Z'’-]+")
_NUM = re.compile(r"[$€£]?\d+(?:[.,:]\d+)*%?")


def extractor_like_entities(summary: str) -> Sequence[str]:
    """Entities as the rules extractor declares them: names and numbers, speaker excluded.

    The extractor reads names off the first-person source ("My dog Luna is 3" → Luna, 3); on
    a third-person summary the speaker is the first word, so it is dropped here.
    """
    names = [re.sub(r"['’]s$", "", w) for w in _NAME.findall(summary)[1:]]
    return list(dict.fromkeys([*names, *_NUM.findall(summary)]))[:8]


def cosines(pairs: Sequence[Pair], embed: Embed) -> np.ndarray:
    """Cosine of each pair (rows from `embed` are L2-normalised; re-normalised to be safe)."""
    if not pairs:
        return np.zeros(0, dtype=np.float32)
    texts = [p.a for p in pairs] + [p.b for p in pairs]
    vectors = np.asarray(embed(texts), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    n = len(pairs)
    return np.einsum("ij,ij->i", vectors[:n], vectors[n:])


def _memory(i: int, summary: str, entities: Sequence[str], memory_type: str = "semantic") -> Memory:
    return Memory(id=f"pair-{i}", user_id="calibration", type=memory_type, summary=summary,
                  created_at=_T0, updated_at=_T0, last_accessed=_T0, entities=list(entities))


def decisions(pairs: Sequence[Pair], scores: Sequence[float], profile: EmbedderProfile, *,
              memory_type: str = "semantic", entities: Entities = no_entities,
              use_heuristics: bool = True,
              _prepared: Sequence[tuple[Memory, list[str]]] | None = None) -> list[Action]:
    """`dedup.decide` for each pair: `b` the candidate, `a` its single neighbour at `score`."""
    prepared = _prepared if _prepared is not None else _prepare(pairs, entities, memory_type)
    when = _T0 + timedelta(hours=1)
    return [
        decide(memory_type=memory_type, summary=pair.b, entities=b_entities, event_time=when,
               neighbours=[(neighbour, float(score))], profile=profile,
               merge_window=timedelta(hours=72), use_heuristics=use_heuristics).action
        for pair, score, (neighbour, b_entities) in zip(pairs, scores, prepared)
    ]


def _prepare(pairs: Sequence[Pair], entities: Entities,
             memory_type: str = "semantic") -> list[tuple[Memory, list[str]]]:
    """Per pair: `a` as a stored memory, and the candidate's entities."""
    return [(_memory(i, p.a, entities(p.a), memory_type), list(entities(p.b)))
            for i, p in enumerate(pairs)]


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def metrics(pairs: Sequence[Pair], actions: Sequence[Action]) -> dict[str, Any]:
    """Precision/recall/F1 of "same fact" (= update), and what each kind of pair became."""
    tp = sum(1 for p, a in zip(pairs, actions) if p.same and a is Action.update)
    fp = sum(1 for p, a in zip(pairs, actions) if not p.same and a is Action.update)
    fn = sum(1 for p, a in zip(pairs, actions) if p.same and a is not Action.update)
    tn = len(pairs) - tp - fp - fn
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = _ratio(2 * tp, 2 * tp + fp + fn)
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for p, a in zip(pairs, actions):
        by_kind[p.kind or ("same" if p.same else "not_same")][a.value] += 1
    changed = by_kind.get("changed_value", Counter())
    superseded = sum(c["supersede"] for c in by_kind.values())
    return {
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "precision": precision, "recall": recall, "f1": f1,
        "changed_value_supersede_rate": _ratio(changed["supersede"], sum(changed.values())),
        # of the pairs that superseded, the share that really changed a value
        "supersede_precision": _ratio(changed["supersede"], superseded),
        "changed_value_merged": changed["update"],
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
    }


def _grid(start: float, stop: float, step: float) -> list[float]:
    n = round((stop - start) / step)
    return [round(start + i * step, 4) for i in range(n + 1)]


DEFAULT_AUTO_GRID = _grid(0.80, 0.98, 0.01)
DEFAULT_LOW_GRID = _grid(0.60, 0.98, 0.01)


def sweep(pairs: Sequence[Pair], scores: Sequence[float], profile: EmbedderProfile, *,
          auto_grid: Iterable[float] = DEFAULT_AUTO_GRID,
          low_grid: Iterable[float] = DEFAULT_LOW_GRID,
          entities: Entities = no_entities) -> list[dict[str, Any]]:
    """Metrics at every `(auto, check_low)` with `check_low ≤ auto` (semantic bands)."""
    lows = sorted(set(low_grid))
    prepared = _prepare(pairs, entities)
    rows = []
    for auto in sorted(set(auto_grid)):
        for low in (x for x in lows if x <= auto):
            banded = replace(profile, semantic_auto=auto, semantic_check_low=low)
            m = metrics(pairs, decisions(pairs, scores, banded, _prepared=prepared))
            rows.append({"auto": auto, "check_low": low,
                         **{k: v for k, v in m.items() if k != "by_kind"}})
    return rows


def recommend(rows: Sequence[Mapping[str, Any]], min_precision: float = 0.9,
              min_supersede: float = 0.5) -> dict[str, Any] | None:
    """Best F1 among bands with precision ≥ `min_precision` that still supersede at least
    `min_supersede` of the changed values (a check band set too high turns a changed value
    into a second active memory). Ties: fewer changed values merged (a merge loses the new
    value), more superseded, then the higher (more conservative) auto and check_low."""
    ok = [r for r in rows if r["precision"] >= min_precision and r["tp"] > 0
          and r["changed_value_supersede_rate"] >= min_supersede]
    if not ok:
        return None
    best = max(ok, key=lambda r: (round(r["f1"], 6), -r["changed_value_merged"],
                                  r["changed_value_supersede_rate"], r["auto"], r["check_low"]))
    return dict(best)


def _score_stats(pairs: Sequence[Pair], scores: Sequence[float]) -> dict[str, dict[str, float]]:
    by_kind: dict[str, list[float]] = defaultdict(list)
    for p, s in zip(pairs, scores):
        by_kind[p.kind or ("same" if p.same else "not_same")].append(float(s))
    return {k: {"n": len(v), "min": min(v), "mean": float(np.mean(v)), "max": max(v)}
            for k, v in sorted(by_kind.items())}


def evaluate_bands(pairs: Iterable[Pair | Mapping[str, Any]], embed: Embed,
                   profile: EmbedderProfile, *, entities: Entities = no_entities,
                   auto_grid: Iterable[float] = DEFAULT_AUTO_GRID,
                   low_grid: Iterable[float] = DEFAULT_LOW_GRID,
                   min_precision: float = 0.9, min_supersede: float = 0.5) -> dict[str, Any]:
    """Precision/recall of "same fact" at `profile`'s semantic bands, plus a band sweep.

    Returns `{"profile", "bands", "pairs", "current", "scores", "sweep", "recommended"}`:
    `current` holds tp/fp/fn/tn, precision, recall, f1, the share of changed values that
    supersede, how many changed values were wrongly merged, and per kind the actions taken.
    """
    items = [as_pair(p) for p in pairs]
    scores = cosines(items, embed)
    actions = decisions(items, scores, profile, entities=entities)
    current = metrics(items, actions)
    current["by_set"] = {
        name or "first": {k: v for k, v in metrics(*zip(*[(p, a) for p, a in zip(items, actions)
                                                          if p.set == name])).items()
                          if k != "by_kind"}
        for name in sorted({p.set for p in items})}
    rows = sweep(items, scores, profile, auto_grid=auto_grid, low_grid=low_grid, entities=entities)
    return {
        "profile": profile.name,
        "bands": {"auto": profile.semantic_auto, "check_low": profile.semantic_check_low},
        "pairs": len(items),
        "current": current,
        "scores": _score_stats(items, scores),
        "sweep": rows,
        "recommended": recommend(rows, min_precision, min_supersede),
    }


def format_report(result: Mapping[str, Any], top: int = 15) -> str:
    """A plain-text table of one `evaluate_bands` result."""
    cur, bands = result["current"], result["bands"]
    lines = [
        (f"profile {result['profile']}  pairs {result['pairs']}  "
         f"bands auto={bands['auto']:.2f} check_low={bands['check_low']:.2f}"),
        (f"  same fact at current bands: P={cur['precision']:.3f} R={cur['recall']:.3f} "
         f"F1={cur['f1']:.3f} (tp={cur['tp']} fp={cur['fp']} fn={cur['fn']} tn={cur['tn']}); "
         f"changed values superseded {cur['changed_value_supersede_rate']:.0%}, "
         f"merged {cur['changed_value_merged']}; supersede precision "
         f"{cur['supersede_precision']:.3f}"),
    ]
    for name, m in cur.get("by_set", {}).items():
        lines.append(f"    pairs of round {name!r}: same fact P={m['precision']:.3f} "
                     f"R={m['recall']:.3f}; supersede P={m['supersede_precision']:.3f} "
                     f"R={m['changed_value_supersede_rate']:.3f}")
    lines.append("  cosine by kind:")
    for kind, s in result["scores"].items():
        lines.append(f"    {kind:<15} n={s['n']:<3} min={s['min']:.3f} mean={s['mean']:.3f} "
                     f"max={s['max']:.3f}")
    lines.append("  actions by kind at current bands:")
    for kind, counts in cur["by_kind"].items():
        lines.append(f"    {kind:<15} " + " ".join(f"{a}={n}" for a, n in sorted(counts.items())))
    lines.append(f"  sweep (top {top} by F1, then precision):")
    lines.append("     auto  check_low  precision  recall     f1  supersede  cv_merged")
    ranked = sorted(result["sweep"], key=lambda r: (-r["f1"], -r["precision"], -r["auto"]))
    for r in ranked[:top]:
        lines.append(f"    {r['auto']:.2f}     {r['check_low']:.2f}      {r['precision']:.3f}   "
                     f"{r['recall']:.3f}  {r['f1']:.3f}      {r['changed_value_supersede_rate']:.2f}"
                     f"          {r['changed_value_merged']}")
    rec = result["recommended"]
    if rec:
        lines.append(f"  recommended: auto={rec['auto']:.2f} check_low={rec['check_low']:.2f} "
                     f"(P={rec['precision']:.3f} R={rec['recall']:.3f} F1={rec['f1']:.3f}, "
                     f"changed values superseded {rec['changed_value_supersede_rate']:.0%})")
    else:
        lines.append("  recommended: no swept band reaches the precision and supersede floors")
    return "\n".join(lines)


def main(path: str | Path = DEFAULT_PAIRS, embed: Embed | None = None,
         profile: EmbedderProfile | None = None) -> dict[str, Any]:
    """Print the calibration of the `EMBEDDER` setting's embedder (or `embed`/`profile`) on
    `path`, with both entity modes: none declared (dedup's fallback) and extractor-like entities."""
    if embed is None or profile is None:
        from streams.app.services import settings_embedder
        from streams.settings import get_settings

        embedder = settings_embedder(get_settings())
        embed, profile = embed or embedder.embed, profile or embedder.profile
        print(f"embedder: {get_settings().embedding.embedder} ({profile.name}); its profile's bands: "
              f"auto={profile.semantic_auto:.2f} check_low={profile.semantic_check_low:.2f}")
    pairs = load_pairs(path)
    results = {}
    for label, entities in (("fallback entities", no_entities),
                            ("extractor-like entities", extractor_like_entities)):
        result = evaluate_bands(pairs, embed, profile, entities=entities)
        print(f"== {label} ==")
        print(format_report(result))
        results[label] = result
    return results


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_PAIRS)
