"""Ids of the commands the registry sends, namespaced per caller.

A caller names a write with `Idempotency-Key` (or gets a random id) and sees only that name: in
the answer, the status URL and `GET …/commands/{id}`. The command sent to `memory.commands`
carries `api/<namespace>/<name>`, the namespace a digest of the caller's principal (role and
agent id). So two principals using the same key send two commands, each applied once (a
retry by the same principal still applies once), and a caller looks up outcomes only in its own
namespace: never another principal's, nor a command said in chat (`thread:turn:kind`, which
cannot start with `api/`: a thread id has no slash).
"""
from __future__ import annotations

import hashlib

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
