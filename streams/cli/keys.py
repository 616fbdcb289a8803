"""`memstream keys …` (API keys, the master key) and the keys `memstream run` keeps for a local
service: an admin API key and a master key in DATA_DIR."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from streams.settings import Settings, get_settings
from streams.cli.common import BrokerOpt, broker_url, console

if TYPE_CHECKING:
    from streams.api.auth import KeyEntry

keys_app = typer.Typer(help="API keys (streams/api/auth.py).")


def dev_admin_entries(settings: Settings) -> list[KeyEntry]:
    """With no key configured, `run` accepts one admin key and says where it is kept.

    The key is made once per data dir and kept in DATA_DIR/admin-api-key (mode 0600), where the
    local CLI finds it; it is never printed in full (a console may be logged or shared) nor
    logged. Production workers take keys from the settings.
    """
    from streams.api import auth

    if len(auth.KeyRing.from_settings(settings)):
        return []
    path = auth.dev_key_path(settings)
    key = auth.dev_admin_key(settings)
    console.print(f"[yellow]no API keys configured[/]: an admin key ({auth.masked(key)}) is in "
                  f"{path}; the admin page is http://{settings.api.web_host}:{settings.api.web_port}/admin")
    return [auth.entry_for(key, "admin", "admin")]


def with_kept_master_key(settings: Settings, make: bool = False) -> Settings:
    """With no master key configured, the one `memstream run` keeps in DATA_DIR/master-key
    (mode 0600; made first when `make`). `memstream worker` never makes one: every worker of a
    deployment needs the same key."""
    if settings.privacy.memstream_master_key is not None or settings.privacy.master_key_file is not None:
        return settings
    path = Path(settings.kafka.data_dir) / "master-key"
    if make and not path.exists():
        _write_private(path, new_master_key())
    return settings.with_values(master_key_file=path) if path.exists() else settings


def master_key(settings: Settings) -> bytes | None:
    """The master key the settings give (None: none configured)."""
    from streams.privacy.crypto import master_key_of

    return master_key_of(settings.privacy)


def new_master_key() -> str:
    """A new master key: 32 random bytes, url-safe base64."""
    from streams.privacy.crypto import encode_key, new_key

    return encode_key(new_key())


def _write_private(path: Path, text: str) -> None:
    """Create a file only its owner may read (mode 0600); never through a symlink, never over
    an existing file (`streams.api.auth.write_private`)."""
    from streams.api.auth import write_private

    write_private(path, text)


@keys_app.command("new")
def keys_new(
    agent: Annotated[str, typer.Option(help="The agent id the key stands for (its category allowlist applies).")],
    role: Annotated[str, typer.Option(help="agent, admin, or metrics (may read /metrics only).")] = "agent",
    user: Annotated[Optional[list[str]], typer.Option(help="Limit the key to this user id (repeatable).")] = None,
) -> None:
    """Make an API key: prints the key (give it to the client) and the entry the worker needs
    (add it to MEMSTREAM_API_KEYS or API_KEYS_FILE; only its hash is kept)."""
    from streams.api import auth

    if role not in ("agent", "admin", "metrics"):
        console.print("[red]--role must be agent, admin or metrics[/]")
        raise typer.Exit(2)
    key = auth.new_key()
    entry = auth.entry_for(key, agent, role, user)  # type: ignore[arg-type]
    print(key)
    console.print("worker entry (add to the JSON list of MEMSTREAM_API_KEYS or API_KEYS_FILE):")
    print(entry.model_dump_json(exclude_none=True))


@keys_app.command("master")
def keys_master() -> None:
    """Make a master key: 32 random bytes, url-safe base64. Give the same one to every worker
    (MEMSTREAM_MASTER_KEY or MASTER_KEY_FILE); it wraps every user's data key, so losing it
    loses every memory, and it must never be stored in Kafka or logged."""
    print(new_master_key())


@keys_app.command("rotate")
def keys_rotate(
    new_key_file: Annotated[Path, typer.Option(help="File holding the new master key (`memstream keys master`).", exists=True, dir_okay=False)],
    workers_stopped: Annotated[bool, typer.Option(help="Every worker is stopped: skip the consumer-group check (the embedded broker lists members that left).")] = False,
    broker: BrokerOpt = None,
) -> None:
    """Re-wrap every user's data key under a new master key, with every worker stopped.

    The keys configured now (MEMSTREAM_MASTER_KEY or MASTER_KEY_FILE, each of a comma list)
    unwrap; the new one wraps. Then start the workers with MEMSTREAM_MASTER_KEY=NEW,OLD, and
    later NEW alone (docs/privacy.md)."""
    from streams.privacy.crypto import MasterKeys, decode_key, master_keys_of
    from streams.privacy.rotation import UnwrappableKeys
    from streams.tools.key_rotation import WorkersRunning, rotate_changelog
    from streams.tools.unseal import changelog_topic

    settings = get_settings()
    old = master_keys_of(settings.privacy)
    if old is None:
        console.print("[red]no master key configured: set MEMSTREAM_MASTER_KEY or MASTER_KEY_FILE "
                      "to the current one[/]")
        raise typer.Exit(2)
    new = decode_key(new_key_file.read_text(encoding="utf-8"))
    masters = MasterKeys(new, tuple(k for k in old.accepted if k != new))
    topic = changelog_topic(settings.kafka.app_id, "user_keys")
    try:
        report = asyncio.run(rotate_changelog(broker_url(broker), topic, masters, settings.kafka.app_id,
                                              check_group=not workers_stopped))
    except (WorkersRunning, UnwrappableKeys) as exc:
        console.print(f"[red]{exc}[/]; nothing was changed")
        raise typer.Exit(1) from None
    console.print(f"{topic}: {report.rewrapped} keys re-wrapped, {report.current} already under "
                  f"the new master key, {report.without_key} users without a key (purged)")
