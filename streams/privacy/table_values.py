"""How a sealed table stores a value: a small binary envelope, or (read only) the JSON one of
before.

Binary: a format byte | sealer (0: the user's data key, 1: the master key in transit) | length
of the user id (2 bytes, big-endian) | the user id (UTF-8) | the sealed bytes
(`streams.privacy.crypto.seal_raw`). The format byte says what was sealed: `b"\\x06"` (written
now for a value with vectors) its JSON with the vectors taken out as bytes
(`streams.privacy.binary_vectors`), compressed with zstd and a preset dictionary
(`streams.privacy.value_dictionary`), `b"\\x05"` (written now for one without) its JSON
compressed with the dictionary, each when that is shorter; `b"\\x01"` the JSON as it is (written
now for a value compression does not shorten). Written before and still read: `b"\\x04"` and
`b"\\x03"`, the same two deflated (zlib) with the same dictionary, and `b"\\x02"` deflated
without one (docs/decisions.md#table-values-compress-with-zstd).
A table's values are JSON documents that repeat their field names and quote their vectors in
base64: deflated, a memory document is a third smaller, an `applied` record two thirds
(docs/decisions.md#deflated-table-values); the dictionary, which holds those field names and
usual values once for all, takes about 14 % more off
(docs/decisions.md#table-values-deflate-with-a-preset-dictionary-their-vectors-as-bytes).
Compressing before sealing lets the length of a value depend on its content; a value holds one
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
import threading
import zlib
from dataclasses import dataclass
from typing import Any, Literal

import orjson
import zstandard
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
then sealed (written before; read)."""
VECTORS_DEFLATED = b"\x04"
"""The format byte of a value whose base64 vectors were taken out as bytes
(`streams.privacy.binary_vectors.split`), then deflated with `VALUE_DICTIONARY`, each part a
block of its own, then sealed (written before; read)."""
COMPRESSED = b"\x05"
"""The format byte of a value compressed with zstd and `VALUE_DICTIONARY` (one frame that
names its size), then sealed (written now for a value without vectors)."""
VECTORS_COMPRESSED = b"\x06"
"""The format byte of a value whose vectors were taken out as bytes
(`streams.privacy.binary_vectors.split`), then compressed with zstd and `VALUE_DICTIONARY` in one
frame that names its size, each part a block of its own, then sealed (written now for a value
with vectors)."""
FORMATS = (FORMAT, DEFLATED, DICTIONARY_DEFLATED, VECTORS_DEFLATED, COMPRESSED, VECTORS_COMPRESSED)
_ZLIB_FORMATS = (DEFLATED, DICTIONARY_DEFLATED, VECTORS_DEFLATED)
_SPLIT_FORMATS = (VECTORS_DEFLATED, VECTORS_COMPRESSED)
_BY = ("user", "transit")
ZSTD_LEVEL = 3
"""zstd's level 3 with the dictionary: on the values of a conv-30 run, 18 µs a value (the
vectors' split included) where zlib's level 3 with the same dictionary took 56, and 923 bytes
against 925 (docs/decisions.md#table-values-compress-with-zstd)."""
_DICTIONARY = zstandard.ZstdCompressionDict(VALUE_DICTIONARY, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
_DICTIONARY.precompute_compress(level=ZSTD_LEVEL)  # once, not per value as zlib's zdict
_codecs = threading.local()
"""Each thread's zstd compressor and decompressor (neither may be used by two threads at once;
making one with the dictionary costs about half of compressing a value)."""
MIN_COMPRESSED = 64
"""Values shorter than this are sealed as they are: a frame's header outweighs what it saves."""
MAX_INFLATED = 64 * 1024 * 1024
"""The most a compressed value may grow to when it is read (the producer's request limit is far
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
    def compressed(self) -> bool:
        """Whether what was sealed is compressed (zstd, or zlib before)."""
        return self.form != FORMAT


def is_packed(raw: bytes) -> bool:
    """Whether `raw` starts as a binary value does (it may still not be one: `unpack`)."""
    return raw[:1] in FORMATS


def _compressor() -> zstandard.ZstdCompressor:
    compressor = getattr(_codecs, "compressor", None)
    if compressor is None:
        compressor = _codecs.compressor = zstandard.ZstdCompressor(
            level=ZSTD_LEVEL, dict_data=_DICTIONARY, write_checksum=False, write_dict_id=False)
    return compressor


def _decompressor() -> zstandard.ZstdDecompressor:
    decompressor = getattr(_codecs, "decompressor", None)
    if decompressor is None:
        decompressor = _codecs.decompressor = zstandard.ZstdDecompressor(dict_data=_DICTIONARY)
    return decompressor


def compress(plaintext: bytes) -> tuple[bytes, bytes]:
    """What to seal for `plaintext`, and its format byte: compressed with the dictionary when
    that is shorter (`MIN_COMPRESSED`), its vectors as bytes when it has any
    (`VECTORS_COMPRESSED`), else as it is (`FORMAT`)."""
    if len(plaintext) < MIN_COMPRESSED:
        return plaintext, FORMAT
    parts = binary_vectors.split(plaintext)
    compressor = _compressor()
    if parts is None:
        body, form = compressor.compress(plaintext), COMPRESSED
    else:
        blocks = [part for part in parts if part]
        writer = compressor.compressobj(size=sum(map(len, blocks)))
        out = []
        for block in blocks[:-1]:  # a block each: its own literals' codes
            out += [writer.compress(block), writer.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)]
        out += [writer.compress(blocks[-1]), writer.flush()]
        body, form = b"".join(out), VECTORS_COMPRESSED
    return (body, form) if len(body) < len(plaintext) else (plaintext, FORMAT)


def decompress(opened: bytes, form: bytes) -> bytes:
    """The plaintext of an opened value of format `form` (`compress`, or the zlib formats
    written before); raises `SealError` for a compressed one that does not decompress, would
    grow past `MAX_INFLATED`, or whose vectors do not fit back."""
    if form == FORMAT:
        return opened
    plaintext = _inflated(opened, form) if form in _ZLIB_FORMATS else _decompressed(opened)
    if form not in _SPLIT_FORMATS:
        return plaintext
    try:
        return binary_vectors.joined(plaintext)
    except binary_vectors.SplitValueError as exc:
        raise SealError(f"a table value's vectors do not fit back: {exc}") from None


def _decompressed(opened: bytes) -> bytes:
    """A zstd frame's content; its size is read from the frame and checked first."""
    try:
        size = zstandard.frame_content_size(opened)
        if not 0 <= size <= MAX_INFLATED:
            raise SealError("a compressed table value does not name its size, or is too large")
        return _decompressor().decompress(opened)
    except zstandard.ZstdError:
        raise SealError("a compressed table value does not decompress") from None


def _inflated(opened: bytes, form: bytes) -> bytes:
    inflater = (zlib.decompressobj() if form == DEFLATED
                else zlib.decompressobj(zdict=VALUE_DICTIONARY))
    try:
        plaintext = inflater.decompress(opened, MAX_INFLATED)
    except zlib.error:
        raise SealError("a deflated table value does not inflate") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise SealError("a deflated table value is cut short or too large")
    return plaintext


def pack(user_id: str, sealed: bytes, form: bytes = FORMAT) -> bytes:
    """The binary table value of `sealed` (by the user's data key) for `user_id`; `form`: what
    was sealed (`compress`'s format byte)."""
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
