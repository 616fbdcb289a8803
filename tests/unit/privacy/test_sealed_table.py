"""`SealedTable` keeps recently opened values, and never serves one it should not."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from streams.privacy import sealed as sealed_module
from streams.privacy.crypto import new_key
from streams.privacy.sealed import Sealer, SealedTable, user_first_in_key
from streams.privacy.user_keys import UserKeys


class CountingSealer(Sealer):
    def __init__(self, keys: UserKeys) -> None:
        super().__init__(keys)
        self.opened = 0

    def open_stored(self, stored):  # type: ignore[no-untyped-def]
        self.opened += 1
        return super().open_stored(stored)


@pytest.fixture
def table() -> SealedTable:
    return SealedTable({}, CountingSealer(UserKeys({}, new_key())), user_first_in_key)


def test_a_value_is_opened_once_however_often_it_is_read(table):
    table['["u","k"]'] = {"summary": "Ana has a dog."}
    reads = [table['["u","k"]'] for _ in range(5)]
    assert reads == [{"summary": "Ana has a dog."}] * 5
    assert table.sealer.opened == 0
    reads[0]["summary"] = "changed by a caller"
    assert table['["u","k"]'] == {"summary": "Ana has a dog."}, "each read is a fresh value"


def test_a_value_changed_underneath_is_opened_again(table):
    table['["u","k"]'] = {"n": 1}
    other = SealedTable(table.table, table.sealer, user_first_in_key)  # e.g. a recovery's writes
    other['["u","k"]'] = {"n": 2}
    assert table['["u","k"]'] == {"n": 2}


def test_after_a_purge_nothing_opens_even_if_the_user_gets_a_new_key(table):
    table['["u","k"]'] = {"summary": "Ana has a dog."}
    table.sealer.keys.shred("u", datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert '["u","k"]' not in dict(table.items())
    table.sealer.keys.data_key("u", create=True)
    with pytest.raises(KeyError):
        table['["u","k"]']


def test_the_cache_is_bounded(table, monkeypatch):
    monkeypatch.setattr(sealed_module, "OPENED_CACHE_SIZE", 3)
    for i in range(10):
        table[f'["u","{i}"]'] = {"i": i}
    assert len(table._opened) == 3
    assert [table[f'["u","{i}"]']["i"] for i in range(10)] == list(range(10))
