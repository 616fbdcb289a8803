"""The registry's request bodies (`streams.api.registry_models`, read by
`streams.api.registry._body`) under hostile input: the model or `BadRequest` (HTTP 400) whose
message names fields but none of the input."""
from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from streams.api.registry import BadRequest, _body
from streams.api.registry_models import EditBody, TopicBody
from tests.fuzzing import MARKER, assert_content_free, assert_usable, dumps, fuzz_settings, hostile_bytes
from tests.unit.fuzz.records import edit_bodies, topic_bodies

BODIES: dict[type[BaseModel], st.SearchStrategy] = {EditBody: edit_bodies, TopicBody: topic_bodies}


@pytest.mark.parametrize("model", list(BODIES), ids=lambda m: m.__name__)
def test_any_body_gives_the_model_or_a_content_free_bad_request(model):
    @fuzz_settings(200)
    @given(raw=hostile_bytes(BODIES[model]))
    @example(raw=dumps({"text": "x", "topic": "x", MARKER: 1}).encode())  # named the unknown field
    def check(raw: bytes) -> None:
        try:
            body = _body(model, raw)
        except BadRequest as exc:
            assert_content_free(exc)
        else:
            assert_usable(body)

    check()
