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
        fields = sorted({".".join(map(str, e["loc"])) or "<root>" for e in exc.errors()})
        raise LLMInvalidOutput(f"{model.__name__} failed on {', '.join(fields)}") from None
