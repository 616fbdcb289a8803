"""Ids of the commands the registry sends, namespaced per caller.

A caller names a write with `Idempotency-Key` (or gets a random id) and sees only that name: in
the answer, the status URL and `GET …/commands/{id}`. The command sent to `memory.commands`
carries `api/<namespace>/<name>`, the namespace a digest of the caller's principal (role and
agent id). So two principals using the same key send two commands, each applied once (a
retry by the same principal still applies once), and a caller looks up outcomes only in its own
namespace: never another principal's, nor a command said in chat (`thread:turn:kind`, which
cannot start with `api/`: a thread id has no slash).

A name is bound to what it was given for (`binding`): the request's method, its path (the user,
the memory or topic or proposal, the action) and its body. The command carries the binding and
its `applied` record keeps it, so a write that reuses a name for anything else is answered 409
`idempotency_key_reused` rather than with the first write's outcome, and the commands stage
refuses such a command if it gets there first (`streams.pipeline.commands`). The binding is an
HMAC under a key derived from the master key: commands travel with their text sealed, and a
plain digest of it would confirm a guess of the text to anyone reading `memory.commands`.
"""
from __future__ import annotations

import hashlib
import hmac

import orjson
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from streams.api.auth import Principal

PREFIX = "api/"
NAMESPACE_CHARS = 16
OVERHEAD = len(PREFIX) + NAMESPACE_CHARS + 1
"""Characters a namespaced id adds to the caller's name."""


def namespace(principal: Principal) -> str:
    """The caller's namespace: a digest of its role and agent id (bounded length, whatever the
    agent id)."""
    digest = hashlib.sha256(f"{principal.role}\x00{principal.agent_id}".encode("utf-8"))
    return digest.hexdigest()[:NAMESPACE_CHARS]


def command_id(principal: Principal, name: str) -> str:
    """The id on `memory.commands` of the caller's command `name`."""
    return f"{PREFIX}{namespace(principal)}/{name}"


BINDING_LABEL = b"memstream idempotency binding v1"
BINDING_CHARS = 32


def binding_key(master_key: bytes) -> bytes:
    """The key of the bindings: a key of its own, derived from the master key (HKDF-SHA256
    under its own label)."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=BINDING_LABEL).derive(master_key)


def binding(key: bytes, method: str, path: str, body: str = "") -> str:
    """What a write's command ids are bound to: an HMAC of its method, its path (decoded: user,
    target, action; not the query string, so a retry may wait otherwise) and its body as parsed
    (`body`: its canonical JSON, "" when the route reads none)."""
    message = orjson.dumps([method.upper(), path, body])
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:BINDING_CHARS]
