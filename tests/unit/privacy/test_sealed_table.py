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


def test_the_cache_holds_a_bounded_number_of_bytes_dropping_the_least_recently_read(table, monkeypatch):
    monkeypatch.setattr(sealed_module, "OPENED_CACHE_BYTES", 100)
    for i in range(4):
        table[f'["u","{i}"]'] = {"text": str(i) * 20}  # 31 bytes of JSON each
    assert list(table._opened) == ['["u","1"]', '["u","2"]', '["u","3"]'], "the oldest is dropped"
    assert table['["u","1"]'] == {"text": "1" * 20}  # read: now the most recently used
    table['["u","4"]'] = {"text": "4" * 20}
    assert list(table._opened) == ['["u","3"]', '["u","1"]', '["u","4"]']
    assert table._opened_bytes == 93
    assert table.sealer.opened == 0
    assert [table[f'["u","{i}"]']["text"][0] for i in (3, 1, 4)] == list("314")
    assert table.sealer.opened == 0, "what is kept is not opened again"
    assert table['["u","0"]'] == {"text": "0" * 20}
    assert table.sealer.opened == 1, "what was dropped is"


def test_a_value_larger_than_the_cache_is_still_kept_alone_and_what_is_deleted_is_forgotten(table, monkeypatch):
    monkeypatch.setattr(sealed_module, "OPENED_CACHE_BYTES", 10)
    table['["u","a"]'] = {"text": "a" * 20}
    table['["u","b"]'] = {"text": "b" * 20}
    assert list(table._opened) == ['["u","b"]']
    del table['["u","b"]']
    assert not table._opened and table._opened_bytes == 0


def test_a_purge_drops_the_users_opened_values_at_once_and_keeps_the_others(table):
    table['["u","k"]'] = {"summary": "Ana has a dog."}
    table['["v","k"]'] = {"summary": "Bo has a cat."}
    table.sealer.keys.shred("u", datetime(2024, 1, 1, tzinfo=timezone.utc))
    kept = [opened[2] for opened in table._opened.values()]
    assert kept == [b'{"summary":"Bo has a cat."}'], "no plaintext of the purged user stays in memory"
    assert table._opened_bytes == len(kept[0])
    assert table['["v","k"]'] == {"summary": "Bo has a cat."} and table.sealer.opened == 0
