"""The JSON schema each task's answer must satisfy, for servers that constrain output with one.

The schemas are made from the pydantic models the answers are validated against
(`streams.providers.llm.schemas`), so what a server is told and what we accept cannot drift
apart. A constrained answer is still validated: servers honour schemas loosely (lengths,
enums) or not at all, and the summary rules (third person, two sentences) are no JSON schema.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

from streams.providers.llm.base import Task
from streams.providers.llm.schemas import (
    ConsolidationOutput,
    ExtractionBatch,
    InsightOutput,
    QueryPartsOutput,
    SameFactOutput,
    TriggerBatch,
)

OUTPUTS: dict[Task, type[BaseModel]] = {
    Task.trigger: TriggerBatch, Task.extract: ExtractionBatch, Task.same_fact: SameFactOutput,
    Task.consolidate: ConsolidationOutput, Task.insight: InsightOutput,
    Task.query_parts: QueryPartsOutput,
}
"""The output model of each task's call (the trigger and extraction answer for several turns)."""


BATCHED = (Task.trigger, Task.extract)
"""The tasks whose answer holds one item per turn asked (`{"turns": [...]}`)."""


def _facts_follow_the_decision(schema: dict[str, Any]) -> dict[str, Any]:
    """The extraction item as two shapes, the validation model's rule made explicit: a "skip"
    with `"facts": []`, a kind with 1-3 facts. Under a grammar a small model otherwise writes
    three made-up facts beside its "skip" (validation ignores them, but they cost the output
    tokens of the whole answer)."""
    defs = dict(schema["$defs"])
    props = defs["ExtractionItem"]["properties"]
    kinds = [kind for kind in props["decision"]["enum"] if kind != "skip"]

    def shape(decision: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "properties": {"n": props["n"], "decision": decision, "facts": facts},
                "required": ["n", "decision", "facts"]}

    defs["ExtractionItem"] = {"anyOf": [
        shape({"const": "skip"}, {**props["facts"], "maxItems": 0}),
        shape({"type": "string", "enum": kinds}, {**props["facts"], "minItems": 1}),
    ]}
    return {**schema, "$defs": defs}


@cache
def json_schema(task: Task, turns: int = 1) -> dict[str, Any]:
    """The JSON schema of `task`'s answer (the model's validation schema); for a call about
    `turns` turns, its list holds exactly that many items, so that a server constraining output
    with the schema (a grammar) has the model answer every turn, not the first alone. What is
    sent is stricter than what is accepted, never looser: the answer is validated by the model."""
    schema = OUTPUTS[task].model_json_schema()
    if task is Task.extract:
        schema = _facts_follow_the_decision(schema)
    if task in BATCHED:
        items = dict(schema["properties"]["turns"])
        schema = {**schema, "properties": {**schema["properties"],
                                           "turns": {**items, "minItems": turns, "maxItems": turns}}}
    return schema
