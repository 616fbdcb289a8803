"""Master-key rotation: several master keys are accepted (the first wraps), and a rotation
re-wraps every user's key under the new one without changing the key itself."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from pydantic import SecretStr

from streams.settings import PrivacySettings
from streams.privacy.crypto import (MasterKeyError, MasterKeys, SealError, decode_keys, encode_key,
                                    master_key_of, master_keys_of, new_key)
from streams.privacy.rotation import UnwrappableKeys, rotate_records
from streams.privacy.user_keys import UserKeys

OLD, NEW = new_key(), new_key()


def settings(value: str) -> PrivacySettings:
    return PrivacySettings(memstream_master_key=SecretStr(value), master_key_file=None)


def test_the_setting_may_list_several_master_keys_the_first_wraps():
    keys = master_keys_of(settings(f"{encode_key(NEW)}, {encode_key(OLD)}"))
    assert keys == MasterKeys(NEW, (OLD,))
    assert master_key_of(settings(f"{encode_key(NEW)},{encode_key(OLD)}")) == NEW
    assert decode_keys(f"{encode_key(NEW)}\n{encode_key(OLD)}\n") == keys, "a key file: one a line"
    with pytest.raises(MasterKeyError):
        decode_keys(" , ")


def test_a_key_wrapped_by_an_old_master_key_opens_and_new_keys_are_wrapped_by_the_new_one():
    table: dict = {}
    before = UserKeys(table, OLD)
    sealed = before.seal("ana", b"Ana has a dog named Luna.")
    during = UserKeys(table, MasterKeys(NEW, (OLD,)))
    assert during.open("ana", sealed) == b"Ana has a dog named Luna."
    during.seal("bo", b"Bo likes tea.")
    assert UserKeys(table, NEW).data_key("bo") is not None, "a new key is wrapped by NEW"
    with pytest.raises(SealError):
        UserKeys(table, NEW).data_key("ana")  # not rotated yet


def changelog(table: dict) -> dict[tuple[int, bytes], bytes | None]:
    return {(0, user.encode()): json.dumps(record).encode() for user, record in table.items()}


def test_a_rotation_rewraps_every_key_and_leaves_the_keys_and_the_purged_alone():
    table: dict = {}
    old = UserKeys(table, OLD)
    sealed = {user: old.seal(user, f"{user}'s secret".encode()) for user in ("ana", "bo", "cy")}
    old.shred("cy", datetime(2024, 1, 1, tzinfo=timezone.utc))
    UserKeys(table, MasterKeys(NEW, (OLD,))).seal("dee", b"dee's")  # already under NEW
    writes, report = rotate_records(changelog(table), MasterKeys(NEW, (OLD,)))
    assert (report.rewrapped, report.current, report.without_key) == (2, 1, 1)
    rotated = {**table, **{key.decode(): json.loads(value) for (_, key), value in writes.items()}}
    after = UserKeys(rotated, NEW)
    assert after.open("ana", sealed["ana"]) == b"ana's secret"
    assert after.open("bo", sealed["bo"]) == b"bo's secret"
    assert after.data_key("cy") is None and after.purged_at("cy") is not None, "a shred stays"
    again, report = rotate_records(changelog(rotated), MasterKeys(NEW, (OLD,)))
    assert again == {} and report.current == 3, "a second run has nothing to do"


def test_a_rotation_that_cannot_unwrap_a_key_writes_nothing():
    table: dict = {}
    UserKeys(table, OLD).seal("ana", b"x")
    UserKeys(table, new_key()).seal("bo", b"y")  # wrapped by a master key nobody gave
    with pytest.raises(UnwrappableKeys):
        rotate_records(changelog(table), MasterKeys(NEW, (OLD,)))
