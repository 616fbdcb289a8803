"""How a sealed table stores a value: a small binary envelope, or (read only) the JSON one of
before.

Binary: a format byte | sealer (0: the user's data key, 1: the master key in transit) | length
of the user id (2 bytes, big-endian) | the user id (UTF-8) | the sealed bytes
(`streams.privacy.crypto.seal_raw`). The format byte says what was sealed: `b"\\x04"` (written
now for a value with vectors) its JSON with the vectors taken out as bytes
(`streams.privacy.binary_vectors`), deflated (zlib) with a preset dictionary
(`streams.privacy.value_dictionary`), `b"\\x03"` (written now for one without) its JSON
deflated with the dictionary, each when that is shorter; `b"\\x02"` deflated without one (written before),
`b"\\x01"` the JSON as it is (written before, and now for a value deflate does not shorten).
A table's values are JSON documents that repeat their field names and quote their vectors in
base64: deflated, a memory document is a third smaller, an `applied` record two thirds
(docs/decisions.md#deflated-table-values); the dictionary, which holds those field names and
usual values once for all, takes about 14 % more off
(docs/decisions.md#table-values-deflate-with-a-preset-dictionary-their-vectors-as-bytes).
Deflating before sealing lets the length of a value depend on its content; a value holds one
user's data only, so no one can learn another user's content from it. Before, a table value was
the `topics.sealed.Sealed` envelope as JSON, its sealed bytes in base64 inside: a third larger on disk and in every
changelog record, and parsed by pydantic on every read. Those values still read (a dict in
process; in the worker, whose sealed tables now hand over raw bytes, the JSON text the old
serializer wrote), so tables written before the upgrade open after it; each is rewritten in
the binary form the next time its key is written.
"""
from __future__ import annotations

import base64
import binascii
import zlib
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import ValidationError

from streams.privacy import binary_vectors
from streams.privacy.crypto import SealError
from streams.privacy.value_dictionary import VALUE_DICTIONARY
from topics.sealed import Sealed

FORMAT = b"\x01"
"""The format byte of a value sealed as it is."""
DEFLATED = b"\x02"
"""The format byte of a value deflated, then sealed (written before; read)."""
DICTIONARY_DEFLATED = b"\x03"
"""The format byte of a value deflated with `VALUE_DICTIONARY` as zlib's preset dictionary,
then sealed (written now for a value without vectors)."""
VECTORS_DEFLATED = b"\x04"
"""The format byte of a value whose base64 vectors were taken out as bytes
(`streams.privacy.binary_vectors.split`), then deflated with `VALUE_DICTIONARY`, each part a
block of its own, then sealed (written now for a value with vectors)."""
FORMATS = (FORMAT, DEFLATED, DICTIONARY_DEFLATED, VECTORS_DEFLATED)
_BY = ("user", "transit")
DEFLATE_LEVEL = 3
"""zlib's level 3: with the dictionary, 6-7 % shorter than level 1 for a few per cent more CPU
(the values of a conv-30 run: 589 against 631 bytes an `applied`, `turn_log` or buffer value,
1,662 against 1,685 a memory record; 52.8 against 50.5 µs a value)."""
DEFLATE_WINDOW_BITS = 14
"""A 16 KB window (zlib's default is 32 KB): the dictionary (9 KB) and all of a usual value
(3 KB on average) fit in it, and zlib sets up a smaller window faster: with the dictionary, a
value deflates in the time it took without one in the default window (34 µs a value on the
values of a conv-30 run, where the default window alone took 34 and this one alone 24)."""
MIN_DEFLATED = 64
"""Values shorter than this are sealed as they are: deflate's header and checksum outweigh
what it saves."""
MAX_INFLATED = 64 * 1024 * 1024
"""The most a deflated value may grow to when it is read (the producer's request limit is far
below): past that, it is refused rather than read into memory."""


@dataclass(frozen=True)
class StoredValue:
    """A sealed table value, unpacked: whose it is, what sealed it, the sealed bytes, and its
    format byte (what was sealed: `FORMATS`)."""

    user_id: str
    by: Literal["user", "transit"]
    sealed: bytes
    form: bytes = FORMAT

    @property
    def deflated(self) -> bool:
        """Whether what was sealed is deflated (with the dictionary or without)."""
        return self.form != FORMAT


def is_packed(raw: bytes) -> bool:
    """Whether `raw` starts as a binary value does (it may still not be one: `unpack`)."""
    return raw[:1] in FORMATS


def deflate(plaintext: bytes) -> tuple[bytes, bytes]:
    """What to seal for `plaintext`, and its format byte: deflated with the dictionary when
    that is shorter (`MIN_DEFLATED`), its vectors as bytes when it has any
    (`VECTORS_DEFLATED`), else as it is (`FORMAT`)."""
    if len(plaintext) < MIN_DEFLATED:
        return plaintext, FORMAT
    parts = binary_vectors.split(plaintext)
    deflater = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, DEFLATE_WINDOW_BITS,
                                zdict=VALUE_DICTIONARY)
    if parts is None:
        deflated, form = deflater.compress(plaintext) + deflater.flush(), DICTIONARY_DEFLATED
    else:
        blocks = [part for part in parts if part]
        out = []
        for block in blocks[:-1]:  # a block each: its own Huffman codes
            out += [deflater.compress(block), deflater.flush(zlib.Z_BLOCK)]
        out += [deflater.compress(blocks[-1]), deflater.flush()]
        deflated, form = b"".join(out), VECTORS_DEFLATED
    return (deflated, form) if len(deflated) < len(plaintext) else (plaintext, FORMAT)


def inflate(opened: bytes, form: bytes) -> bytes:
    """The plaintext of an opened value of format `form` (`deflate`); raises `SealError` for a
    deflated one that does not inflate, inflates past `MAX_INFLATED`, or whose vectors do not
    fit back."""
    if form == FORMAT:
        return opened
    inflater = (zlib.decompressobj() if form == DEFLATED
                else zlib.decompressobj(zdict=VALUE_DICTIONARY))
    try:
        plaintext = inflater.decompress(opened, MAX_INFLATED)
    except zlib.error:
        raise SealError("a deflated table value does not inflate") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise SealError("a deflated table value is cut short or too large")
    if form != VECTORS_DEFLATED:
        return plaintext
    try:
        return binary_vectors.joined(plaintext)
    except binary_vectors.SplitValueError as exc:
        raise SealError(f"a table value's vectors do not fit back: {exc}") from None


def pack(user_id: str, sealed: bytes, form: bytes = FORMAT) -> bytes:
    """The binary table value of `sealed` (by the user's data key) for `user_id`; `form`: what
    was sealed (`deflate`'s format byte)."""
    user = user_id.encode("utf-8")
    return form + b"\x00" + len(user).to_bytes(2, "big") + user + sealed


def unpack(value: Any) -> StoredValue:
    """A stored value in either form (module doc); raises `SealError` for anything else."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        if is_packed(value):
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
    return StoredValue(user_id, _BY[value[1]], value[end:], value[:1])
