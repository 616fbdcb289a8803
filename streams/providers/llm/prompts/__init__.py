"""System prompts of the LLM tasks, one text file per task beside this module (package data)."""
from __future__ import annotations

from functools import cache
from importlib.resources import files

from streams.providers.llm.base import Task


@cache
def system_prompt(task: Task) -> str:
    """The system prompt of `task`, read once from `<task>.txt`."""
    return files(__name__).joinpath(f"{task.value}.txt").read_text(encoding="utf-8").strip()
