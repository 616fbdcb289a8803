"""How a sealed table stores a value: a small binary envelope, or (read only) the JSON one of
before.

Binary, written now: `b"\\x01"` | sealer (0: the user's data key, 1: the master key in transit) |
length of the user id (2 bytes, big-endian) | the user id (UTF-8) | the sealed bytes
(`streams.privacy.crypto.seal_raw`). Before, a table value was the `topics.sealed.Sealed`
envelope as JSON, its sealed bytes in base64 inside: a third larger on disk and in every
changelog record, and parsed by pydantic on every read. Those values still read (a dict in
process; in the worker, whose sealed tables now hand over raw bytes, the JSON text the old
serializer wrote), so tables written before the upgrade open after it; each is rewritten in
the binary form the next time its key is written.
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import ValidationError

from streams.privacy.crypto import SealError
from topics.sealed import Sealed

FORMAT = b"\x01"
_BY = ("user", "transit")


@dataclass(frozen=True)
class StoredValue:
    """A sealed table value, unpacked: whose it is, what sealed it, and the sealed bytes."""

    user_id: str
    by: Literal["user", "transit"]
    sealed: bytes


def pack(user_id: str, sealed: bytes) -> bytes:
    """The binary table value of `sealed` (by the user's data key) for `user_id`."""
    user = user_id.encode("utf-8")
    return FORMAT + b"\x00" + len(user).to_bytes(2, "big") + user + sealed


def unpack(value: Any) -> StoredValue:
    """A stored value in either form (module doc); raises `SealError` for anything else."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        if value[:1] == FORMAT:
            return _binary(value)
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise SealError("not a sealed table value") from None
    try:
        envelope = Sealed.model_validate(value)
        sealed = base64.urlsafe_b64decode(envelope.sealed.encode("ascii"))
    except (ValidationError, binascii.Error, ValueError, UnicodeEncodeError):
        raise SealError("not a sealed table value") from None
    return StoredValue(envelope.user_id, envelope.by, sealed)


def _binary(value: bytes) -> StoredValue:
    if len(value) < 4 or value[1] >= len(_BY):
        raise SealError("not a sealed table value")
    end = 4 + int.from_bytes(value[2:4], "big")
    try:
        user_id = value[4:end].decode("utf-8")
    except UnicodeDecodeError:
        raise SealError("not a sealed table value") from None
    if not user_id or len(value) <= end:
        raise SealError("not a sealed table value")
    return StoredValue(user_id, _BY[value[1]], value[end:])
