"""Records that are JSON arrays of many similar entries (`memory.progress`, and `memory.events`
as written before one event a record: `topics.events_wire`), deflated: a stage writes one record
per user per batch, whose entries repeat their field names, ids and user id, so zlib keeps about
half of it or less.

A deflated record is the byte `DEFLATED` (0x02) then the zlib stream of the JSON array; a JSON
value starts with `[`, `{` or white space, so a reader tells the two apart by the first byte
and still reads records written before in clear. A record is deflated only when that is shorter.
(A sealed table's value uses the same byte for deflated-then-sealed, `streams.privacy.
table_values`: the topic, a changelog or one of these, says which a record is.)
"""
from __future__ import annotations

import zlib

from streams.errors import MemstreamError

DEFLATED = b"\x02"
"""The first byte of a deflated record."""
DEFLATE_LEVEL = 1
"""zlib's fastest: the repeated names and ids are what it finds at any level; the sealed
content (base64 of ciphertext) gives little to a slower one."""
DEFLATE_WINDOW_BITS = 14
"""A 16 KB window, half zlib's default: a batch's entries repeat what the entries just before
them hold, and zlib sets a smaller window up faster (a third less CPU for a record of a few KB)."""
MAX_INFLATED = 16 * 1024 * 1024
"""The most a deflated record may grow to when read (the producer's request limit is far
below): past that it is refused rather than read into memory."""


class DeflatedRecordError(MemstreamError, ValueError):
    """A record that says it is deflated and does not inflate (or inflates past `MAX_INFLATED`)."""


def deflated(array: bytes) -> bytes:
    """The record of a JSON array: deflated behind `DEFLATED` when that is shorter, else as it is."""
    packed = DEFLATED + zlib.compress(array, DEFLATE_LEVEL, DEFLATE_WINDOW_BITS)
    return packed if len(packed) < len(array) else array


def inflated(raw: bytes) -> bytes:
    """The JSON of a record (`deflated`), as it is when it is not deflated; raises
    `DeflatedRecordError`."""
    if raw[:1] != DEFLATED:
        return raw
    inflater = zlib.decompressobj()
    try:
        array = inflater.decompress(raw[1:], MAX_INFLATED)
    except zlib.error:
        raise DeflatedRecordError("a deflated record does not inflate") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise DeflatedRecordError("a deflated record is cut short or too large")
    return array
