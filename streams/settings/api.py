"""Settings of one concern: http api, auth and server-sent events (docs/configuration.md#api)."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field, SecretStr

from streams.settings.section import Section


class ApiSettings(Section):
    """HTTP API, auth and server-sent events."""

    title: ClassVar[str] = "HTTP API, auth and server-sent events"
    about: ClassVar[str] = (
        "The worker's web server, its API keys, limits and event streams "
        '([architecture.md](architecture.md#serving), the routes: [api.md](api.md)).'
    )

    web_host: str = Field("127.0.0.1", description="Host the worker's web server binds and advertises.")
    web_port: int = Field(6066, description="Port of the worker's web server (query API, /metrics).")
    memstream_api_keys: str | None = Field(
        None, description="API keys the worker accepts, as a JSON list of {agent_id, role "
        "(agent|admin|metrics), sha256 (hex of the key), users (optional list)}; `memstream keys new` "
        "prints an entry. Only hashes, never keys.",
    )
    api_keys_file: Path | None = Field(
        None, description="File with more key entries (the same JSON list, or YAML); re-read "
        "when it changes, so a key removed from it stops working without a restart.",
    )
    memstream_api_key: SecretStr | None = Field(
        None, description="The key the CLI and clients send (default: DATA_DIR/admin-api-key, "
        "written by `memstream run`).",
    )
    command_wait_max_seconds: float = Field(
        10.0, gt=0, description="Longest a registry write with ?wait=1 waits for its command.",
    )
    sse_replay_events: int = Field(
        50, ge=1, description="Recent events kept per user for SSE Last-Event-ID reconnects (a "
        "batch writes only its own events to the table's changelog, a purge the stored batches "
        "it reaches; a change of this size rewrites the buffer once).",
    )
    sse_batch_size: int = Field(
        256, ge=1, description="memory.events records the SSE buffer takes at once (one buffer "
        "write per user per batch).")
    sse_batch_within_ms: int = Field(20, ge=1, description="Longest wait to fill an SSE batch.")
    sse_ping_seconds: float = Field(15.0, gt=0, description="SSE keep-alive comment interval.")
    sse_queue_events: int = Field(
        1000, ge=1, description="Events buffered per SSE client; a client that falls further "
        "behind is disconnected and resumes with Last-Event-ID.",
    )
    sse_max_streams: int = Field(
        1000, ge=1, description="Event streams (SSE connections) one worker serves at once; one "
        "more is a 429.",
    )
    sse_max_streams_per_user: int = Field(
        8, ge=1, description="Event streams of one user one API key holds on a worker at once (each "
        "key has its own count, so one key cannot take a user's streams from another); one more is "
        "a 429.",
    )
    api_rate_per_second: float = Field(
        0.0, ge=0, description="Requests a second one API key may make to one worker, on average "
        "(a token bucket per key, streams/api/limits.py); past it a request is answered 429 with "
        "Retry-After and does nothing. 0: no limit.",
    )
    api_rate_burst: int = Field(
        20, ge=1, description="Requests one API key may make at once before API_RATE_PER_SECOND "
        "applies (the bucket's size).",
    )
    api_max_body_bytes: int = Field(
        1048576, ge=1, description="Largest request body the API reads; a larger one is a 413.",
    )
    web_max_connections: int = Field(
        0, ge=0, description="HTTP connections the worker's web server keeps open at once, event "
        "streams included; one more is answered 503 and closed at once (streams/api/connections.py). "
        "0: a quarter of the process's open-file limit (soft RLIMIT_NOFILE), between 16 and 2048, so "
        "the rest stays for Kafka, RocksDB and the model. Event streams get at most three quarters of "
        "it (SSE_MAX_STREAMS is lowered to that), so /health and queries always find room.",
    )
    web_header_timeout_seconds: float = Field(
        10.0, gt=0, description="Longest a client may take to send a request's line and headers, "
        "from when it connects or starts its next request on a kept-alive connection; a slower "
        "connection is closed.",
    )
    web_body_timeout_seconds: float = Field(
        30.0, gt=0, description="Longest a client may take to send a request's body once its "
        "headers are in (at most API_MAX_BODY_BYTES); a slower connection is closed.",
    )
    web_keepalive_seconds: float = Field(
        75.0, gt=0, description="Longest a kept-alive connection may stay idle between requests "
        "(aiohttp's keepalive_timeout); longer than the 60 s of the proxies usually in front "
        "(nginx, AWS ALB), so they close first. A request being answered, an event stream "
        "included, is never idle.",
    )
    sse_max_streams_per_key: int = Field(
        0, ge=0, description="Event streams one API key holds on a worker at once, over all its "
        "users; one more is a 429. 0: half of SSE_MAX_STREAMS (as lowered to the connections' "
        "share). Never all of them, so one key always leaves room for the others; and streams of "
        "users with no data yet (no memory, no buffered event) take at most a quarter of the "
        "worker's, half of that for one key (streams/api/hub.py).",
    )
    sse_auth_check_seconds: float = Field(
        0.5, gt=0, le=1.0, description="How often a worker looks at API_KEYS_FILE and the "
        "categories YAML for its open event streams (two stats): a stream whose key was removed, "
        "or may no longer act for its user, ends, and a narrowed allowlist applies from the next "
        "event, within this time and without a request (at most 1 s).",
    )
