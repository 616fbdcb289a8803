"""The vectors of a table value as bytes, not base64, inside what is compressed.

A memory document quotes its vectors in base64 (`streams.memory.vector_index`: `"h:…"` float16,
`"i8:…"` int8 with its scale). A compressor (zstd now, zlib's deflate before) barely shortens
base64: it spreads each byte over characters, so the redundancy of the float16 values is lost
(their high bytes, sign and exponent, hold 5.5 bits of 8; their low bytes 8). Before
compressing (`streams.privacy.table_values`), `split` takes every such string out of the JSON, leaving a NUL
byte in its place (orjson writes a NUL inside a string as an escape, never as a byte), and gives
the value back in parts for the compressor to code in blocks of their own (each block has its
own Huffman codes, so the high bytes are not coded with the random low ones):

    header: <JSON length, 4 bytes> <JSON, each vector a NUL byte> (<kind, 1 byte> <length, 4 bytes>)*
    then the low bytes of every float16 vector, then their high bytes, then the int8 vectors' bytes

`joined` puts the strings back. A string is taken out only when its base64 is the canonical
form of its bytes, so the JSON comes back byte for byte.
"""
from __future__ import annotations

import base64
import binascii
import re

import numpy as np

from streams.errors import MemstreamError

_VECTOR = re.compile(rb'"(h|i8):([A-Za-z0-9+/]{4,}={0,2})"')
_HALF, _INT8 = 1, 2
_KINDS = {b"h": _HALF, b"i8": _INT8}
_PREFIXES = {_HALF: b'"h:', _INT8: b'"i8:'}
_MARK = b"\x00"


class SplitValueError(MemstreamError, ValueError):
    """A split value (`split`) whose parts do not fit together."""


def split(plaintext: bytes) -> list[bytes] | None:
    """`plaintext` (JSON) as the parts to compress (module doc): the header, then the low bytes,
    the high bytes and the int8 bytes of its vectors (each part but the header may be empty);
    None when it quotes no vector to take out."""
    if b'"h:' not in plaintext and b'"i8:' not in plaintext:  # most values: no scan
        return None
    json_parts: list[bytes] = []
    table: list[bytes] = []
    low: list[bytes] = []
    high: list[bytes] = []
    int8: list[bytes] = []
    at = 0
    for match in _VECTOR.finditer(plaintext):
        kind, encoded = _KINDS[match.group(1)], match.group(2)
        try:
            data = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            continue
        if base64.b64encode(data) != encoded or (kind == _HALF and len(data) % 2):
            continue
        if kind == _HALF:
            pairs = np.frombuffer(data, np.uint8).reshape(-1, 2)
            low.append(pairs[:, 0].tobytes())
            high.append(pairs[:, 1].tobytes())
        else:
            int8.append(data)
        json_parts += [plaintext[at:match.start()], _MARK]
        table.append(kind.to_bytes(1, "big") + len(data).to_bytes(4, "big"))
        at = match.end()
    if not table:
        return None
    json_parts.append(plaintext[at:])
    json_text = b"".join(json_parts)
    header = len(json_text).to_bytes(4, "big") + json_text + b"".join(table)
    return [header, b"".join(low), b"".join(high), b"".join(int8)]


def joined(value: bytes) -> bytes:
    """The JSON whose parts (`split`), decompressed, are `value`; raises `SplitValueError` when
    they do not fit together."""
    if len(value) < 4:
        raise SplitValueError("a split value is shorter than its header")
    end = 4 + int.from_bytes(value[:4], "big")
    if end > len(value):
        raise SplitValueError("a split value is cut short")
    pieces = value[4:end].split(_MARK)
    table_end = end + 5 * (len(pieces) - 1)
    vectors = []
    for at in range(end, table_end, 5):
        if table_end > len(value) or value[at] not in _PREFIXES:
            raise SplitValueError("a split value lacks a vector")
        kind, length = value[at], int.from_bytes(value[at + 1:at + 5], "big")
        if kind == _HALF and length % 2:
            raise SplitValueError("a split value's float16 vector has an odd length")
        vectors.append((kind, length))
    half = sum(length for kind, length in vectors if kind == _HALF) // 2
    int8_at = table_end + 2 * half
    if int8_at + sum(length for kind, length in vectors if kind == _INT8) != len(value):
        raise SplitValueError("a split value's vectors do not add up")
    out = [pieces[0]]
    low_at = table_end
    for (kind, length), piece in zip(vectors, pieces[1:]):
        if kind == _HALF:
            n = length // 2
            pairs = np.empty((n, 2), np.uint8)
            pairs[:, 0] = np.frombuffer(value, np.uint8, n, low_at)
            pairs[:, 1] = np.frombuffer(value, np.uint8, n, low_at + half)
            data, low_at = pairs.tobytes(), low_at + n
        else:
            data, int8_at = value[int8_at:int8_at + length], int8_at + length
        out += [_PREFIXES[kind], base64.b64encode(data), b'"', piece]
    return b"".join(out)
