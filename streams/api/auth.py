"""API keys: who may call which route of the worker (SPEC §5 Auth).

A key maps to an agent id and a role (`agent` or `admin`), optionally limited to some user ids.
The worker keeps only the SHA-256 of each key: keys are 256-bit random tokens, so a fast hash is
enough (no password stretching needed) and the key itself is never stored or logged.

Entries come from `MEMSTREAM_API_KEYS` and/or `API_KEYS_FILE`, both a JSON list (the file may
also be YAML) of `{"agent_id": "...", "role": "agent|admin", "sha256": "<hex>", "users": [...]}`.
`memstream keys new` makes a key and prints its entry.

Every route but the public ones needs a key (`Authorization: Bearer <key>` or `X-API-Key`).
`/v1/users/{user_id}/...` routes need a key that may act for that user; any other route needs
an admin key. Faust's `table_route` forwards a request with its headers, so the key travels
with it to the worker that owns the user.
"""
from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

import yaml
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from streams.api.views import Handler, Middleware
from streams.app.settings import Settings

log = logging.getLogger(__name__)

Role = Literal["agent", "admin"]
PUBLIC_PATHS = frozenset({"/health", "/admin", "/admin/"})
PUBLIC_PREFIXES = ("/admin/static/",)
USER_PREFIX = "/v1/users/"
PRINCIPAL = "principal"


class AuthConfigError(ValueError):
    """The key configuration cannot be read (the worker refuses to start)."""


class AccessDenied(Exception):
    """The caller's key may not do this; answered 403 with the message (never data)."""


class KeyEntry(BaseModel):
    """One configured key, by its hash."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str = Field(min_length=1, max_length=200)
    role: Role
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    users: list[str] | None = Field(None, description="User ids the key may act for; all when unset.")


_ENTRIES = TypeAdapter(list[KeyEntry])


@dataclass(frozen=True)
class Principal:
    """Who is calling: the agent behind the key and what it may do."""

    agent_id: str
    role: Role
    users: frozenset[str] | None = None

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def actor(self) -> str:
        """The actor written into audit entries of this caller's commands."""
        return f"{self.role}:{self.agent_id}"

    def may_act_for(self, user_id: str) -> bool:
        return self.users is None or user_id in self.users


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh API key (256 bits of randomness)."""
    return "msk_" + secrets.token_urlsafe(32)


def entry_for(key: str, agent_id: str, role: Role, users: Iterable[str] | None = None) -> KeyEntry:
    return KeyEntry(agent_id=agent_id, role=role, sha256=hash_key(key),
                    users=sorted(users) if users is not None else None)


def parse_entries(text: str, source: str) -> list[KeyEntry]:
    """Key entries from JSON or YAML text; raises `AuthConfigError` naming what is wrong."""
    try:
        data = yaml.safe_load(text) if text.strip() else []
        return _ENTRIES.validate_python(data or [])
    except yaml.YAMLError:
        raise AuthConfigError(f"{source}: not valid JSON or YAML") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise AuthConfigError(f"{source}: {problems}") from None


class KeyRing:
    """The accepted keys, by hash."""

    def __init__(self, entries: Iterable[KeyEntry] = ()) -> None:
        self._by_hash: dict[str, Principal] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: KeyEntry) -> None:
        self._by_hash[entry.sha256] = Principal(
            entry.agent_id, entry.role, frozenset(entry.users) if entry.users is not None else None)

    def __len__(self) -> int:
        return len(self._by_hash)

    def principal(self, key: str) -> Principal | None:
        return self._by_hash.get(hash_key(key))

    @classmethod
    def from_settings(cls, settings: Settings) -> "KeyRing":
        entries: list[KeyEntry] = []
        if settings.memstream_api_keys:
            entries += parse_entries(settings.memstream_api_keys, "MEMSTREAM_API_KEYS")
        if settings.api_keys_file is not None:
            path = Path(settings.api_keys_file)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise AuthConfigError(f"{path}: cannot read ({exc.strerror})") from None
            entries += parse_entries(text, str(path))
        return cls(entries)


def presented_key(request: web.Request) -> str | None:
    """The key of a request: `Authorization: Bearer <key>`, else `X-API-Key`."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("X-API-Key") or None


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def check_route(principal: Principal, path: str, user_id: str | None) -> None:
    """Raise `AccessDenied` unless `principal` may call `path` at all.

    A user route (`/v1/users/{user_id}/...`) needs a key that may act for that user. Every other
    route needs an admin key — Faust's own /router and /table views can show any table entry —
    except /metrics and /openapi.json, which carry no user data and any key may read (a
    Prometheus scrape uses an agent key).
    """
    if path.startswith(USER_PREFIX) and user_id is not None:
        if not principal.may_act_for(user_id):
            raise AccessDenied("this key cannot act for this user")
        return
    if path in ("/openapi.json", "/metrics"):
        return
    if not principal.is_admin:
        raise AccessDenied("this route needs an admin key")


def principal_of(request: web.Request) -> Principal:
    """The caller, as set by the middleware (every non-public handler has one)."""
    return request[PRINCIPAL]


def require_admin(request: web.Request) -> Principal:
    principal = principal_of(request)
    if not principal.is_admin:
        raise AccessDenied("this needs an admin key")
    return principal


def make_middleware(keyring: KeyRing) -> Middleware:
    """An aiohttp middleware: 401 without a valid key, 403 when the key may not call the route."""

    @web.middleware
    async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if is_public(request.path):
            return await handler(request)
        key = presented_key(request)
        principal = keyring.principal(key) if key else None
        if principal is None:
            return web.json_response({"error": "missing or invalid API key"}, status=401,
                                     headers={"WWW-Authenticate": 'Bearer realm="memstream"'})
        request[PRINCIPAL] = principal
        try:
            check_route(principal, request.path, request.match_info.get("user_id"))
            return await handler(request)
        except AccessDenied as exc:
            return web.json_response({"error": str(exc)}, status=403)

    return auth_middleware


def install(web_app: web.Application, keyring: KeyRing) -> None:
    """Put the auth middleware first on a worker's aiohttp app (before its server starts)."""
    web_app.middlewares.insert(0, make_middleware(keyring))
    if not len(keyring):
        log.warning("no API keys configured: every route but /health answers 401 "
                    "(set MEMSTREAM_API_KEYS or API_KEYS_FILE; `memstream keys new` makes one)")


def dev_key_path(settings: Settings) -> Path:
    """Where `memstream run` keeps its generated admin key (mode 0600), for the local CLI."""
    return Path(settings.data_dir) / "admin-api-key"


def client_key(settings: Settings) -> str | None:
    """The key a local client sends: MEMSTREAM_API_KEY, else the one `memstream run` wrote."""
    if settings.memstream_api_key is not None:
        return settings.memstream_api_key.get_secret_value()
    path = dev_key_path(settings)
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
