"""The OpenAPI document (streams/api/openapi.py) and docs/api.md, which is made from it.

What a running worker answers is checked against the document in
tests/integration/test_openapi_contract.py; here, without a worker: the document is valid
OpenAPI 3.1, each operation declares the answers every operation of its kind can give, and
docs/api.md is what `python -m streams.api.openapi_docs` makes now.
"""
from __future__ import annotations

from pathlib import Path

import schemathesis

from streams.api.openapi import build_spec
from streams.api.openapi_docs import markdown

DOCS = Path(__file__).parents[3] / "docs" / "api.md"
ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}


def operations() -> list[tuple[str, str, dict]]:
    return [(method, path, op) for path, ops in build_spec()["paths"].items()
            for method, op in ops.items()]


def test_the_document_is_valid_openapi_3_1():
    schema = schemathesis.openapi.from_dict(build_spec())
    schema.validate()
    assert all(result.ok() for result in schema.get_all_operations())


def test_every_operation_declares_the_answers_of_its_kind():
    for method, path, op in operations():
        codes = set(op["responses"])
        if op.get("security") != []:
            assert {"401", "403", "503"} <= codes, (method, path)
        if path.startswith("/v1/users/{user_id}"):
            assert {"400", "503"} <= codes, (method, path)  # not a user id; the partition moves
        if "requestBody" in op:
            assert {"400", "413"} <= codes, (method, path)
        if any(p["name"] == "wait" for p in op["parameters"]):
            assert "400" in codes, (method, path)


def test_every_error_is_an_error_object():
    """(A 422 is a rejected command's outcome, /health's 503 the health of a worker not ready.)"""
    for method, path, op in operations():
        for code, response in op["responses"].items():
            if int(code) >= 400 and code != "422" and path != "/health":
                assert response["content"] == ERROR, (method, path, code)


def test_the_event_stream_declares_its_events():
    event = build_spec()["paths"]["/v1/users/{user_id}/events"]["get"]["responses"]["200"]
    schema = event["content"]["text/event-stream"]["schema"]
    names = [option["properties"]["event"] for option in schema["oneOf"]]
    assert "memory.created" in names[0]["enum"] and names[1] == {"const": "reset"}
    data = [option["properties"]["data"]["contentSchema"]["$ref"] for option in schema["oneOf"]]
    assert data == ["#/components/schemas/MemoryEvent", "#/components/schemas/StreamReset"]


def test_docs_api_md_is_made_from_the_document():
    assert DOCS.read_text(encoding="utf-8") == markdown(build_spec()), (
        "docs/api.md is out of date: python -m streams.api.openapi_docs > docs/api.md")
