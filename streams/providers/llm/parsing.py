"""From a model's text answer to a validated output model, or `LLMInvalidOutput`."""
from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from streams.providers.llm.errors import LLMInvalidOutput

M = TypeVar("M", bound=BaseModel)
_DECODER = json.JSONDecoder()


def json_object(text: str) -> dict[str, Any]:
    """The first JSON object in `text`.

    Models sometimes wrap the object in a code fence or add a sentence around it even when told
    not to; what matters is one well-formed object, so we decode from the first "{".
    """
    start = text.find("{")
    if start < 0:
        raise LLMInvalidOutput("no JSON object in the answer")
    try:
        value, _ = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise LLMInvalidOutput(f"malformed JSON at char {exc.pos}") from None
    if not isinstance(value, dict):
        raise LLMInvalidOutput("answer is not a JSON object")
    return value


def parse_output(text: str, model: type[M]) -> M:
    """`text` parsed and validated as `model`.

    The error message names only the failing fields, never their values: answers may quote the
    user's words, which must not reach logs (docs/architecture.md#bad-input).
    """
    data = json_object(text)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        fields = sorted(_failed_fields(exc))
        raise LLMInvalidOutput(f"{model.__name__} failed on {', '.join(fields)}") from None


def _failed_fields(exc: ValidationError) -> set[str]:
    return {".".join(map(str, e["loc"])) or "<root>" for e in exc.errors()}


def _numbered(items: list[Any], count: int) -> list[Any]:
    """The items, numbered by their place where their own numbers cannot be trusted: where the
    answer has exactly one item per turn asked but its `n`s are not 1..`count` each once (left
    out, repeated, or numbers no turn has: small models miscount). For a one-turn call that
    makes any single item the turn's answer. An answer with more or fewer items than turns keeps
    its numbers: an item without a valid one cannot be placed and stays invalid."""
    numbers = [value.get("n") if isinstance(value, dict) else None for value in items]
    if len(items) != count or sorted(map(str, numbers)) == sorted(map(str, range(1, count + 1))):
        return items
    return [{**value, "n": i + 1} if isinstance(value, dict) else value for i, value in enumerate(items)]


def parse_items(text: str, item: type[M], count: int) -> dict[int, M]:
    """The valid items of an answer about turns 1..`count`, by their `n`.

    The answer is one JSON object `{"turns": [{"n": 1, …}, …]}`; each item is validated on its
    own, so a bad, missing or extra one costs its turn alone (the caller answers that turn by the
    rules). For a call about one turn the bare item is that turn's answer too: small models often
    answer a one-turn question so. Raises `LLMInvalidOutput` when not one turn has a valid item;
    like `parse_output`, its message names fields, never values.
    """
    data = json_object(text)
    items = data.get("turns")
    if not isinstance(items, list):
        if count != 1 or "turns" in data:
            raise LLMInvalidOutput("answer has no list of turns")
        items = [data]
    valid: dict[int, M] = {}
    failed: set[str] = set()
    for value in _numbered(items, count):
        try:
            out = item.model_validate(value)
        except ValidationError as exc:
            failed |= _failed_fields(exc)
            continue
        number = getattr(out, "n", 0)
        if 1 <= number <= count:
            valid.setdefault(number, out)
    if not valid:
        raise LLMInvalidOutput(f"{item.__name__} failed on {', '.join(sorted(failed)) or 'every turn'}")
    return valid
