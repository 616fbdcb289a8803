"""API keys: who may call which route of the worker (docs/architecture.md#read-path Auth).

A key maps to an agent id and a role (`agent`, `admin`, or `metrics`: /metrics only), optionally
limited to some user ids.
The worker keeps only the SHA-256 of each key: keys are 256-bit random tokens, so a fast hash is
enough (no password stretching needed) and the key itself is never stored or logged.

Entries come from `MEMSTREAM_API_KEYS` and/or `API_KEYS_FILE`, both a JSON list (the file may
also be YAML) of `{"agent_id": "...", "role": "agent|admin|metrics", "sha256": "<hex>",
"users": [...]}`.
`memstream keys new` makes a key and prints its entry. The file is re-read when it changes
(`KeySource`), so a key removed from it stops working at the next request, without a restart; the
category allowlists are re-read the same way (`reload_on_change`). An open event stream is judged
again whenever either changes (`KeySource.generation`; `streams.api.sse.StreamAuth` looks at both
files without waiting for a request).

Every route but the public ones needs a key (`Authorization: Bearer <key>` or `X-API-Key`).
`/v1/users/{user_id}/...` routes need a key that may act for that user; any other route needs
an admin key. Faust's `table_route` forwards a request with its headers, so the key travels
with it to the worker that owns the user.
"""
from __future__ import annotations

import errno
import hashlib
import logging
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

import yaml
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from streams.errors import MemstreamError
from streams.api.views import Handler, Middleware
from streams.settings import Settings

log = logging.getLogger(__name__)

Role = Literal["agent", "admin", "metrics"]
METRICS_PATH = "/metrics"
PUBLIC_PATHS = frozenset({"/health", "/admin", "/admin/"})
PUBLIC_PREFIXES = ("/admin/static/",)
USER_PREFIX = "/v1/users/"
PRINCIPAL = "principal"


class AuthConfigError(MemstreamError, ValueError):
    """The key configuration cannot be read (the worker refuses to start)."""


class AccessDenied(MemstreamError):
    """The caller's key may not do this; answered 403 with the message (never data)."""


class KeysUnavailable(MemstreamError):
    """API_KEYS_FILE changed into something that cannot be read: every request is refused (503)
    until it is fixed, rather than going on with the old keys (a bad edit must not keep a
    revoked key working)."""


class KeyFileError(MemstreamError):
    """A local key file that is not a plain file of its own (a symlink, or one already there)."""


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
        if self.role == "metrics":
            return False
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
        """The keys configured now (`KeySource` follows the key file as it changes)."""
        return KeySource.from_settings(settings).ring()


def env_entries(settings: Settings) -> list[KeyEntry]:
    if not settings.api.memstream_api_keys:
        return []
    return parse_entries(settings.api.memstream_api_keys, "MEMSTREAM_API_KEYS")


def read_key_file(path: Path) -> list[KeyEntry]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuthConfigError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_entries(text, str(path))


FileStamp = tuple[int, int, int]


def file_stamp(path: Path) -> FileStamp | None:
    """What tells two versions of a file apart: inode (a file renamed over it), modification
    time in ns and size; None when it is missing."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


class FileWatch:
    """Notices that a file changed since it was last looked at: one `stat` per look, cheap
    enough for every request."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp = file_stamp(path)

    def changed(self) -> bool:
        """Whether the file changed since the last call (or since this watch was made)."""
        stamp = file_stamp(self.path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        return True


class KeySource:
    """The accepted keys: `fixed` ones (MEMSTREAM_API_KEYS, `memstream run`'s dev key) and those
    of a key file, re-read whenever the file changes.

    A worker checks the file on each request, so revoking a key is removing its entry from the
    file: the next request with it is a 401. A file that changes into something unreadable
    refuses every key (`KeysUnavailable`) until it is fixed. `generation` counts the re-reads,
    so what was decided with the keys of before (an open event stream's scope) can tell that
    it must be decided again.
    """

    def __init__(self, fixed: Iterable[KeyEntry] = (), path: Path | None = None) -> None:
        self._fixed = list(fixed)
        self._watch = FileWatch(Path(path)) if path is not None else None
        self._problem = ""
        self.generation = 0
        """How many times the key file was re-read (each change, readable or not)."""
        self._ring: KeyRing | None = self._load()  # at start a bad file raises AuthConfigError

    @classmethod
    def from_settings(cls, settings: Settings, extra: Iterable[KeyEntry] = ()) -> "KeySource":
        return cls([*env_entries(settings), *extra], settings.api.api_keys_file)

    def _load(self) -> KeyRing:
        entries = list(self._fixed)
        if self._watch is not None:
            entries += read_key_file(self._watch.path)
        return KeyRing(entries)

    def _reload(self) -> None:
        self.generation += 1
        try:
            self._ring = self._load()
        except AuthConfigError as exc:
            self._ring, self._problem = None, str(exc)
            log.error("every API key is refused until the key file is fixed: %s", exc)
            return
        log.info("API keys re-read: %d accepted", len(self._ring))

    def ring(self) -> KeyRing:
        """The keys accepted now; raises `KeysUnavailable` while the key file is unreadable."""
        if self._watch is not None and self._watch.changed():
            self._reload()
        if self._ring is None:
            raise KeysUnavailable(self._problem)
        return self._ring


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
    Prometheus scrape should use a `metrics` key, which may read /metrics and nothing else).
    """
    if principal.role == "metrics":
        if path != METRICS_PATH:
            raise AccessDenied("a metrics key may only read /metrics")
        return
    if path.startswith(USER_PREFIX) and user_id is not None:
        if not principal.may_act_for(user_id):
            raise AccessDenied("this key cannot act for this user")
        return
    if path in ("/openapi.json", METRICS_PATH):
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


def make_middleware(keys: KeySource) -> Middleware:
    """An aiohttp middleware: 401 without a valid key, 403 when the key may not call the route,
    503 while the key file cannot be read."""

    @web.middleware
    async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if is_public(request.path):
            return await handler(request)
        try:
            keyring = keys.ring()
        except KeysUnavailable:
            return web.json_response({"error": "the API key configuration cannot be read"},
                                     status=503)
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


def reload_on_change(path: Path, reload: Callable[[], None]) -> Middleware:
    """A middleware that calls `reload` before the first request after `path` changed: the
    category allowlists (`load_policy` keeps the YAML once read) are re-read like the keys."""
    watch = FileWatch(path)

    @web.middleware
    async def reload_changed(request: web.Request, handler: Handler) -> web.StreamResponse:
        if watch.changed():
            log.info("%s changed: re-reading it", path)
            reload()
        return await handler(request)

    return reload_changed


KEY_SOURCE = web.AppKey("memstream_key_source", KeySource)
"""Where `install` leaves the app's `KeySource`, for what must follow the keys without a request
(`key_source_of`: the event streams)."""


def install(web_app: web.Application, keys: KeySource) -> None:
    """Put the auth middleware first on a worker's aiohttp app (before its server starts)."""
    web_app.middlewares.insert(0, make_middleware(keys))
    web_app[KEY_SOURCE] = keys
    if not len(keys.ring()):
        log.warning("no API keys configured: every route but /health answers 401 "
                    "(set MEMSTREAM_API_KEYS or API_KEYS_FILE; `memstream keys new` makes one)")


def key_source_of(web_app: web.Application) -> KeySource:
    """The keys `install` put on `web_app` (LookupError: none were)."""
    keys = web_app.get(KEY_SOURCE)
    if keys is None:
        raise LookupError("no API keys installed on this web app (streams.api.auth.install)")
    return keys


def dev_key_path(settings: Settings) -> Path:
    """Where `memstream run` keeps its generated admin key (mode 0600), for the local CLI."""
    return Path(settings.kafka.data_dir) / "admin-api-key"


def client_key(settings: Settings) -> str | None:
    """The key a local client sends: MEMSTREAM_API_KEY, else the one `memstream run` wrote."""
    if settings.api.memstream_api_key is not None:
        return settings.api.memstream_api_key.get_secret_value()
    try:
        return read_private(dev_key_path(settings))
    except OSError:
        return None  # unreadable: the client sends no key (a symlink raises KeyFileError)


def dev_admin_key(settings: Settings) -> str:
    """The admin key `memstream run` accepts when no key is configured: the one kept in
    DATA_DIR/admin-api-key, made there first (mode 0600) when there is none."""
    path = dev_key_path(settings)
    key = read_private(path)
    if key is None:
        path.unlink(missing_ok=True)  # an empty file (a write cut short) is made again
        key = new_key()
        write_private(path, key)
    return key


def masked(key: str) -> str:
    """A hint that tells keys apart without giving one away: its first 8 characters."""
    return key[:8] + "…"


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def write_private(path: Path, text: str) -> None:
    """Create `path` holding `text`, readable by its owner only (0600).

    Never through a symlink and never over an existing file (O_CREAT | O_EXCL | O_NOFOLLOW): a
    link placed where the key goes would otherwise send the key to a file of the link's
    choosing, or overwrite one. Raises `KeyFileError` when something is already there.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except FileExistsError:
        raise KeyFileError(f"{path} exists (a file or a symlink): not overwritten") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text + "\n")


def read_private(path: Path) -> str | None:
    """The text of a key file (stripped), None when it is missing or empty.

    Never through a symlink (O_NOFOLLOW): a link could hand the worker a key its author knows.
    Raises `KeyFileError` for a symlink.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise KeyFileError(f"{path} is a symlink: refused") from None
        raise
    with os.fdopen(fd, encoding="utf-8") as source:
        return source.read().strip() or None
