"""Accuracy of the fact category classifier on a labelled set (issue 13 item 4).

`python -m benchmarks.category_accuracy [FILE ...]` prints, per file, the accuracy,
per-category precision and recall, and the confusions, as JSON. The default sets were written
for this purpose (not taken from LoCoMo), one `CATEGORY<TAB>sentence` a line:
`data/categories_labelled.tsv` (229 facts, the cues of `streams.write.categories` were set
looking at it) and `data/categories_heldout.tsv` (78 facts written afterwards, never tuned on:
the figure to trust).
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from streams.errors import MemstreamError
from streams.write.categories import categorise

DEFAULT_SET = Path(__file__).with_name("data") / "categories_labelled.tsv"
HELD_OUT_SET = DEFAULT_SET.with_name("categories_heldout.tsv")


class LabelledSetError(MemstreamError, ValueError):
    """A line of the labelled set is not `CATEGORY<TAB>text`."""


@dataclass(frozen=True)
class Labelled:
    category: str
    text: str


def load(path: Path = DEFAULT_SET) -> list[Labelled]:
    """The labelled facts of `path` (comment lines start with `#`)."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        category, sep, text = line.partition("\t")
        if not sep or not category.strip() or not text.strip():
            raise LabelledSetError(f"{path}:{n}: expected CATEGORY<TAB>text, got {line!r}")
        rows.append(Labelled(category.strip(), text.strip()))
    return rows


def report(rows: list[Labelled], classify: Callable[[str], str] = categorise) -> dict[str, object]:
    """Accuracy, per-category precision/recall and the most frequent confusions."""
    predicted = [classify(r.text) for r in rows]
    gold = Counter(r.category for r in rows)
    said = Counter(predicted)
    right = Counter(r.category for r, p in zip(rows, predicted) if p == r.category)
    confusions = Counter(f"{r.category} -> {p}" for r, p in zip(rows, predicted) if p != r.category)
    return {
        "facts": len(rows),
        "accuracy": round(sum(right.values()) / len(rows), 4) if rows else 0.0,
        "per_category": {c: {"n": gold[c], "recall": round(right[c] / gold[c], 3),
                             "precision": round(right[c] / said[c], 3) if said[c] else 0.0}
                         for c in sorted(gold)},
        "confusions": dict(confusions.most_common(12)),
    }


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or [DEFAULT_SET, HELD_OUT_SET]
    print(json.dumps({p.name: report(load(p)) for p in paths}, indent=2))


if __name__ == "__main__":
    main()
