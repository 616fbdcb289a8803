"""AES-256-GCM sealing, and the master key that wraps every user's data key.

A sealed value is `b64url(version byte | 12-byte nonce | ciphertext+tag)`, bound to its user by
the associated data, so a value sealed for one user never opens as another's.

The master key setting may name several keys, comma- (or, in a key file, line-) separated: the
first wraps, every one unwraps. That is how a master-key rotation runs without downtime
(`streams.privacy.rotation`, docs/privacy.md): `NEW,OLD` while the keys are re-wrapped, then
`NEW` alone.
"""
from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from streams.errors import MemstreamError
from streams.settings import PrivacySettings

_VERSION = b"\x01"
_NONCE = 12
KEY_BYTES = 32


class MasterKeyError(MemstreamError):
    """The master key is missing or not 32 bytes of url-safe base64."""


class SealError(MemstreamError):
    """A sealed value that does not open: another user's, damaged, or its key is gone."""


def new_key() -> bytes:
    """32 random bytes: a data key, or a fresh master key."""
    return os.urandom(KEY_BYTES)


def encode_key(key: bytes) -> str:
    return base64.urlsafe_b64encode(key).decode("ascii")


def decode_key(text: str) -> bytes:
    """A key written by `encode_key`; raises `MasterKeyError`."""
    try:
        key = base64.urlsafe_b64decode(text.strip().encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise MasterKeyError("the master key is not url-safe base64") from None
    if len(key) != KEY_BYTES:
        raise MasterKeyError(f"the master key must be {KEY_BYTES} bytes, not {len(key)}")
    return key


def seal(key: bytes, plaintext: bytes, context: bytes) -> str:
    """`plaintext` sealed with `key`, bound to `context` (the user id), as url-safe base64."""
    return base64.urlsafe_b64encode(seal_raw(key, plaintext, context)).decode("ascii")


def seal_raw(key: bytes, plaintext: bytes, context: bytes) -> bytes:
    """`plaintext` sealed with `key`, bound to `context`: version | nonce | ciphertext+tag."""
    nonce = os.urandom(_NONCE)
    return _VERSION + nonce + AESGCM(key).encrypt(nonce, plaintext, context)


def open_sealed(key: bytes, sealed: str, context: bytes) -> bytes:
    """The plaintext of `sealed`; raises `SealError` if it does not open with `key`/`context`."""
    try:
        raw = base64.urlsafe_b64decode(sealed.encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise SealError("not a sealed value") from None
    return open_raw(key, raw, context)


def open_raw(key: bytes, raw: bytes, context: bytes) -> bytes:
    """The plaintext of what `seal_raw` made; raises `SealError` if it does not open."""
    if len(raw) < 1 + _NONCE + 16 or raw[:1] != _VERSION:
        raise SealError("not a sealed value")
    try:
        return AESGCM(key).decrypt(raw[1:1 + _NONCE], raw[1 + _NONCE:], context)
    except InvalidTag:
        raise SealError("the value does not open with this key") from None


@dataclass(frozen=True)
class MasterKeys:
    """The master key that wraps (`current`), and older ones still accepted for unwrapping
    while a rotation re-wraps the users' keys (`previous`)."""

    current: bytes
    previous: tuple[bytes, ...] = ()

    @classmethod
    def of(cls, keys: bytes | MasterKeys) -> MasterKeys:
        """`keys` as `MasterKeys` (a single key: no previous ones)."""
        return keys if isinstance(keys, MasterKeys) else cls(keys)

    @property
    def accepted(self) -> tuple[bytes, ...]:
        """Every key that unwraps, the current one first."""
        return (self.current, *self.previous)


def decode_keys(text: str) -> MasterKeys:
    """Master keys written as `encode_key` texts separated by commas or line breaks, the current
    one first; raises `MasterKeyError`."""
    texts = [t for t in text.replace(",", "\n").split() if t]
    if not texts:
        raise MasterKeyError("no master key given")
    keys = [decode_key(t) for t in texts]
    return MasterKeys(keys[0], tuple(keys[1:]))


def master_keys_of(privacy: PrivacySettings) -> MasterKeys | None:
    """The configured master keys (`MEMSTREAM_MASTER_KEY`, else `MASTER_KEY_FILE`), or None.

    Raises `MasterKeyError` when one is configured but unusable.
    """
    if privacy.memstream_master_key is not None:
        return decode_keys(privacy.memstream_master_key.get_secret_value())
    if privacy.master_key_file is not None:
        try:
            text = Path(privacy.master_key_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise MasterKeyError(f"{privacy.master_key_file}: cannot read ({exc.strerror})") from None
        return decode_keys(text)
    return None


def master_key_of(privacy: PrivacySettings) -> bytes | None:
    """The configured master key that wraps (the first of `master_keys_of`), or None."""
    keys = master_keys_of(privacy)
    return keys.current if keys is not None else None
