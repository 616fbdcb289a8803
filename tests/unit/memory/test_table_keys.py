"""Table keys (`streams.memory.tables.composite_key`): the text tables written before hold."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.memory.tables import composite_key, thread_key


def written_before(*parts: str) -> str:
    """How keys were made before orjson made them: every stored key is this text."""
    return json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=4))
def test_a_key_is_the_text_it_was_before_whatever_its_ids_hold(parts: list[str]) -> None:
    assert composite_key(*parts) == written_before(*parts)


def test_ids_that_json_escapes_or_orjson_refuses_keep_their_keys() -> None:
    for parts in [("ü\u2028", 'a"b\\c\n\x00\x1f\x7f'), ("\ud800", "t"), ("😀", "\t")]:
        assert composite_key(*parts) == written_before(*parts)
    assert thread_key("u", "t") == '["u","t"]'
