"""System prompts of the LLM tasks, one text file per task beside this module (package data).

A file may end with the JSON shape of the answer after a `%% shape` line: it is sent to a
provider that is told the shape by the prompt alone (Anthropic, Bedrock, an OpenAI-compatible
server in `none` mode), and left out where the request carries the task's JSON schema, which
says the same to the server (`streams.providers.llm.structured`): the shape is a large share of
a short prompt, and paid for on every call.
"""
from __future__ import annotations

from functools import cache
from importlib.resources import files

from streams.providers.llm.base import Task

SHAPE_MARK = "%% shape"


@cache
def _parts(task: Task) -> tuple[str, str]:
    text = files(__name__).joinpath(f"{task.value}.txt").read_text(encoding="utf-8")
    instructions, _, shape = text.partition(SHAPE_MARK)
    return instructions.strip(), shape.strip()


@cache
def system_prompt(task: Task, *, shape: bool = True) -> str:
    """The system prompt of `task`, read once from `<task>.txt`; without the answer's JSON shape
    when `shape` is false (the request carries the schema)."""
    instructions, answer = _parts(task)
    return f"{instructions}\n{answer}" if shape and answer else instructions
