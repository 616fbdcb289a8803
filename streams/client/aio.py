"""`AsyncMemstreamClient`: what a chat backend or an agent needs of memstream, on asyncio."""
from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from contextlib import suppress
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, overload

import aiohttp
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from pydantic import ValidationError

from streams.api.registry_models import MemoryView
from streams.kafka.security import (
    DEFAULT_CONNECT_TIMEOUT_S,
    BrokerConnectionError,
    kafka_consumer,
    masked,
)
from streams.client.errors import (
    ApiError,
    ApiUnreachable,
    ClientError,
    ConfigurationError,
    ConsumeError,
    ProduceError,
    RateLimited,
    Rejected,
    Unavailable,
    api_error,
)
from streams.client.kafka import idempotent_producer, topic_consumer
from streams.client.messages import turns_of
from streams.client.models import AddResult, Delivery, QueryResult, StreamReset, TurnResult
from streams.client.progress import ProgressFollower, memory_ids, turn_key
from streams.client.registry import RegistryCalls, user_path
from streams.client.sse import SseMessage, sse_messages
from topics.events import MemoryEvent
from topics.names import CHAT_TURNS, MEMORY_PROACTIVITY
from topics.proactivity import ProactivityCandidate
from topics.turns import Turn

if TYPE_CHECKING:
    from streams.settings import Settings

log = logging.getLogger(__name__)

Mode = Literal["bullets", "full"]
NO_EVENT_ID = "-"
"""A Last-Event-ID no event has: the worker answers it with a reset and every event it keeps."""
STREAM_IDLE_S = 60.0
"""An event stream silent this long (the worker pings every SSE_PING_SECONDS, 15) is dead."""


class AsyncMemstreamClient(RegistryCalls):
    """memstream's client on asyncio: produce turns (and wait until they are applied), query,
    list, read, change and remove memories (`streams.client.registry`), watch memory events,
    and consume proactivity candidates. Use `async with` (or call `close`).

    `broker` (Kafka bootstrap servers) is needed for turns and proactivity, `api_url` (a
    worker's web API, any worker) and `api_key` for queries and events. Turns go to
    `chat.turns` keyed by `user_id`, so Kafka's default partitioner puts each user's turns on
    one partition in order, through an idempotent producer (`acks=all`, retries never
    duplicate) that batches for up to `linger_ms`. Every failure is a `ClientError`; a broker
    that cannot be reached, or refuses the TLS handshake or the login, is a `ProduceError` (or
    `ConsumeError`) within `connect_timeout`, its cause the `BrokerConnectionError` saying which
    step failed.
    """

    def __init__(self, broker: str | None = None, api_url: str | None = None,
                 api_key: str | None = None, *, linger_ms: int = 5, timeout: float = 30.0,
                 retries: int = 3, reconnect_delay: float = 1.0,
                 client_id: str = "memstream-client",
                 kafka_security: Mapping[str, Any] | None = None,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
                 apply_timeout: float = 30.0) -> None:
        """`timeout`: seconds per HTTP request; `connect_timeout`: seconds the connection check
        before a producer or consumer starts may take per bootstrap server (TCP, TLS handshake,
        SASL login; `from_settings`: KAFKA_CONNECT_TIMEOUT_SECONDS); `retries`: how often a
        request answered 503 ("retry shortly": a partition moving, a worker recovering) is sent
        again; `reconnect_delay`: seconds before an event stream
        that ended is opened again (unless the worker asked for longer with Retry-After);
        `kafka_security`: aiokafka's connection arguments for a broker that needs TLS or SASL
        (security_protocol, ssl_context, sasl_mechanism, sasl_plain_username, ...), as
        `streams.kafka.security.client_kwargs` makes them from memstream's settings;
        `apply_timeout`: how long `send_turn(..., wait=True)` and `add` wait for the worker to
        apply a turn unless told."""
        self.broker = broker
        self.kafka_security = dict(kafka_security or {})
        self.api_url = api_url.rstrip("/") if api_url else None
        self._api_key = api_key
        self.linger_ms = linger_ms
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.retries = retries
        self.reconnect_delay = reconnect_delay
        self.client_id = client_id
        self.apply_timeout = apply_timeout
        self._producer: AIOKafkaProducer | None = None
        self._producer_lock = asyncio.Lock()
        self._follower: ProgressFollower | None = None
        self._follower_lock = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None
        self._streams: weakref.WeakSet[AsyncGenerator[Any, None]] = weakref.WeakSet()

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **options: Any) -> "AsyncMemstreamClient":
        """A client of the local service as memstream's settings describe it (KAFKA_BROKER_URL
        or the embedded broker with KAFKA_SECURITY_PROTOCOL and the rest, http://WEB_HOST:WEB_PORT,
        MEMSTREAM_API_KEY or the key `memstream run` keeps in DATA_DIR,
        KAFKA_CONNECT_TIMEOUT_SECONDS): what the CLI uses."""
        from streams.api.auth import client_key
        from streams.kafka.security import client_kwargs
        from streams.settings import get_settings

        settings = settings or get_settings()
        values = {"broker": settings.kafka.broker_url, "api_url": f"http://{settings.api.web_host}:{settings.api.web_port}",
                  "api_key": client_key(settings), "kafka_security": client_kwargs(settings.kafka),
                  "connect_timeout": settings.kafka.kafka_connect_timeout_seconds}
        return cls(**{**values, **options})

    async def __aenter__(self) -> "AsyncMemstreamClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Deliver the turns still queued, end open streams, release connections."""
        for stream in list(self._streams):
            with suppress(RuntimeError):  # one being read right now ends with its reader
                await stream.aclose()
        producer, self._producer = self._producer, None
        session, self._session = self._session, None
        follower, self._follower = self._follower, None
        if follower is not None:
            await follower.close()
        try:
            if producer is not None:
                await producer.stop()
        except KafkaError as exc:
            raise ProduceError(f"turns still queued could not be delivered: {exc!r}") from exc
        finally:
            if session is not None:
                await session.close()

    # --- turns -------------------------------------------------------------------------------

    @overload
    async def send_turn(self, turn: Turn, *, wait: Literal[False] = False,
                        timeout: float | None = None) -> Delivery: ...

    @overload
    async def send_turn(self, turn: Turn, *, wait: Literal[True],
                        timeout: float | None = None) -> TurnResult: ...

    async def send_turn(self, turn: Turn, *, wait: bool = False,
                        timeout: float | None = None) -> Delivery | TurnResult:
        """Produce one turn and wait until it is acknowledged. Turns sent at the same time
        (from concurrent tasks) share batches.

        With `wait`, return once the worker has applied it (read-your-writes): a `TurnResult`
        with every progress entry of the turn and the memories it made or changed, read back
        through the API; `ApplyTimeout` after `timeout` seconds (default `apply_timeout`)."""
        if wait:
            return (await self._send_applied([turn], timeout))[0]
        return (await self.send_turns([turn]))[0]

    @overload
    async def send_turns(self, turns: Iterable[Turn], *, wait: Literal[False] = False,
                         timeout: float | None = None) -> list[Delivery]: ...

    @overload
    async def send_turns(self, turns: Iterable[Turn], *, wait: Literal[True],
                         timeout: float | None = None) -> list[TurnResult]: ...

    async def send_turns(self, turns: Iterable[Turn], *, wait: bool = False,
                         timeout: float | None = None) -> list[Delivery] | list[TurnResult]:
        """Produce turns, in order, and wait until every one is acknowledged (with `wait`: until
        every one is applied, as `send_turn`)."""
        if wait:
            return await self._send_applied(list(turns), timeout)
        producer = await self._started_producer()
        try:
            pending = [await producer.send(CHAT_TURNS, key=turn.user_id.encode(),
                                           value=turn.model_dump_json().encode())
                       for turn in turns]
            if len(pending) > 1:
                # Waiting for the batches is cheaper than a wait per turn; then each is done.
                await producer.flush()
            records = [await delivered for delivered in pending]
        except KafkaError as exc:
            raise ProduceError(f"turn not delivered: {exc!r}") from exc
        return [Delivery(r.topic, r.partition, r.offset) for r in records]

    async def add(self, messages: Iterable[Any], user_id: str, thread_id: str, *,
                  speaker: str | None = None, assistant: str | None = None,
                  ts: datetime | None = None, wait: bool = True, timeout: float | None = None,
                  **fields: Any) -> AddResult:
        """Send a conversation's messages as turns of `thread_id` (OpenAI `{"role",
        "content"}` dicts or LangChain message objects: `streams.client.messages`) and, with
        `wait` (the default), return the memories they made or changed once applied (mem0's
        `add`). `speaker` is the user's display name ("Dana": memories then say "Dana …"),
        `ts` the event time (default now), `fields` further turn fields (agent_id, run_id,
        actor_id, metadata, timezone). Without `wait`, the result's turns have no progress."""
        turns = turns_of(messages, user_id, thread_id, ts or datetime.now(timezone.utc),
                         speaker=speaker, assistant=assistant, **fields)
        if not turns:
            return AddResult([])
        if wait:
            return AddResult(await self._send_applied(turns, timeout))
        deliveries = await self.send_turns(turns)
        return AddResult([TurnResult(t, d) for t, d in zip(turns, deliveries)])

    async def _send_applied(self, turns: list[Turn], timeout: float | None) -> list[TurnResult]:
        """Send `turns` and wait until each is applied (`streams.client.progress`), then read
        back the memories each made or changed."""
        follower = await self._started_follower()
        keys = follower.expect(turns)
        try:
            deliveries = await self.send_turns(turns)
        except BaseException:
            follower.forget(keys)
            raise
        progress = await follower.applied(keys, self.apply_timeout if timeout is None else timeout)
        results = []
        for turn, delivery in zip(turns, deliveries):
            entries = progress[turn_key(turn)]
            results.append(TurnResult(turn, delivery, entries,
                                      await self._memories_of(turn.user_id, memory_ids(entries))))
        return results

    async def _memories_of(self, user_id: str, ids: list[str]) -> list[MemoryView]:
        """The memories of `ids` the key may see, read through the API (none without one)."""
        if not self.api_url or not ids:
            return []
        found = [await self.get(user_id, memory_id) for memory_id in ids]
        return [memory for memory in found if memory is not None]

    async def _started_follower(self) -> ProgressFollower:
        async with self._follower_lock:
            if self._follower is None:
                if not self.broker:
                    raise ConfigurationError("waiting for turns to be applied needs a broker")
                consumer = kafka_consumer(self.broker, connect_timeout=self.connect_timeout,
                                          client_id=f"{self.client_id}-progress",
                                          enable_auto_commit=False, **self.kafka_security)
                await self._start(consumer, ConsumeError)
                try:
                    self._follower = await ProgressFollower(consumer).start()
                except BaseException:
                    await consumer.stop()
                    raise
            return self._follower

    async def flush(self) -> None:
        """Wait until every queued turn is delivered."""
        if self._producer is not None:
            await self._producer.flush()

    async def _started_producer(self) -> AIOKafkaProducer:
        async with self._producer_lock:
            if self._producer is None:
                if not self.broker:
                    raise ConfigurationError("producing turns needs a broker (bootstrap servers)")
                producer = idempotent_producer(self.broker, linger_ms=self.linger_ms,
                                               client_id=self.client_id, security=self.kafka_security,
                                               connect_timeout=self.connect_timeout)
                await self._start(producer, ProduceError)
                self._producer = producer
            return self._producer

    async def _start(self, client: Any, error: type[ClientError]) -> None:
        """Start a producer or consumer (after its bounded connection check: a broker that does
        not answer, or refuses the certificate or login, fails here as `error`, saying so)."""
        try:
            await client.start()
        except (BrokerConnectionError, KafkaError) as exc:
            await client.stop()
            reason = str(exc) if isinstance(exc, BrokerConnectionError) else repr(exc)
            raise error(f"cannot reach the broker at {masked(self.broker or '')}: {reason}") from exc

    # --- queries -----------------------------------------------------------------------------

    async def query(self, user_id: str, query: str, *, agent: str = "supervisor",
                    top_k: int | None = None, mode: Mode = "bullets",
                    **fields: Any) -> QueryResult:
        """`memory.query` (POST /v1/users/{user_id}/query) as `agent`, whose category allowlist
        applies. `mode` is the request's `return`: `bullets` (items to put in a prompt, and
        their `context` text) or `full` (the memory documents). `fields` are further request
        fields (`topics.query.QueryRequest`: categories, filters, threshold, budget_tokens,
        thread_id, since_rev, record_access, reference_time, include_archived)."""
        body = {"agent": agent, "query": query, "return": mode, **fields}
        if top_k is not None:
            body["top_k"] = top_k
        answer = await self._request("POST", f"{user_path(user_id)}/query", json=body)
        try:
            return QueryResult.model_validate(answer)
        except ValidationError as exc:
            raise ApiError(200, f"the answer is not a memory.query answer: {exc}") from exc

    async def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of one request; a 503 is asked again up to `retries` times."""
        attempt = 0
        while True:
            try:
                async with self._http().request(method, self._url(path), **kwargs) as response:
                    if response.status < 400:
                        return await response.json(content_type=None)
                    error = await _error_of(response)
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                raise ApiUnreachable(f"{method} {path}: {exc!r}") from exc
            if not isinstance(error, Unavailable) or attempt >= self.retries:
                raise error
            attempt += 1
            await asyncio.sleep(self._pause(error))

    def _pause(self, error: ApiError) -> float:
        """How long to wait before asking again: the answer's Retry-After, else
        `reconnect_delay`, never longer than `timeout`."""
        wait = error.retry_after if error.retry_after is not None else self.reconnect_delay
        return min(max(wait, 0.0), self.timeout)

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else None
            self._session = aiohttp.ClientSession(
                headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout))
        return self._session

    def _url(self, path: str) -> str:
        if not self.api_url:
            raise ConfigurationError("queries and events need the API's URL")
        return self.api_url + path

    # --- memory events (server-sent events) --------------------------------------------------

    def watch(self, user_id: str, *, last_event_id: str | None = None, replay: bool = False,
              reconnect: bool = True) -> AsyncIterator[MemoryEvent | StreamReset]:
        """The user's memory events as they happen (GET /v1/users/{user_id}/events), each once.

        From the event after `last_event_id` when given; with `replay`, from the oldest event
        the worker keeps (SSE_REPLAY_EVENTS per user). A `StreamReset` says events may have
        been missed. When the stream ends (the user's partition moved) or the worker cannot be
        reached, it is opened again after the last event received, unless `reconnect` is
        false. Only the events the key's scope sees arrive.
        """
        return self._track(self._watch(user_id, last_event_id, replay, reconnect))

    async def _watch(self, user_id: str, last_event_id: str | None, replay: bool,
                     reconnect: bool) -> AsyncGenerator[MemoryEvent | StreamReset, None]:
        last = last_event_id or (NO_EVENT_ID if replay else None)
        seen: deque[str] = deque(maxlen=1000)
        while True:
            delay = self.reconnect_delay
            try:
                async for message in self._event_messages(user_id, last):
                    if message.event == "reset":
                        if last != NO_EVENT_ID:
                            yield StreamReset(last)
                        continue
                    if not message.event.startswith("memory."):
                        continue
                    try:
                        event = MemoryEvent.model_validate_json(message.data)
                    except ValidationError:
                        log.warning("skipped an event of %s that is not a MemoryEvent", user_id)
                        continue
                    last = event.event_id
                    if event.event_id not in seen:
                        seen.append(event.event_id)
                        yield event
            except (RateLimited, Unavailable, ApiUnreachable) as exc:
                if not reconnect:
                    raise
                delay = self._pause(exc) if isinstance(exc, ApiError) else delay
                log.info("event stream of %s: %s; reconnecting", user_id, exc)
            if not reconnect:
                return
            await asyncio.sleep(delay)

    async def _event_messages(self, user_id: str, last_event_id: str | None) -> AsyncIterator[SseMessage]:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=STREAM_IDLE_S)
        url = self._url(f"{user_path(user_id)}/events")
        try:
            async with self._http().get(url, headers=headers, timeout=timeout) as response:
                if response.status >= 400:
                    raise await _error_of(response)
                async for message in sse_messages(response.content):
                    yield message
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise ApiUnreachable(f"event stream of {user_id}: {exc!r}") from exc

    # --- proactivity candidates --------------------------------------------------------------

    def proactivity(self, *, user_id: str | None = None, group_id: str | None = None,
                    from_beginning: bool = False) -> AsyncIterator[ProactivityCandidate]:
        """Proactivity candidates (`memory.proactivity`): memories worth a proactive message.

        They carry ids, never text: read the memories through the API. With `group_id` the
        consumer shares the topic's partitions with the group's other members and commits each
        record once the next one is asked for, so a restart resumes after what was handled (at
        least once: drop replays by `candidate_id`). Without it, it reads every partition and
        commits nothing. New records only, unless `from_beginning` (or the group has committed
        offsets). Only `user_id`'s when given.
        """
        return self._track(self._proactivity(user_id, group_id, from_beginning))

    async def _proactivity(self, user_id: str | None, group_id: str | None,
                           from_beginning: bool) -> AsyncGenerator[ProactivityCandidate, None]:
        if not self.broker:
            raise ConfigurationError("consuming memory.proactivity needs a broker")
        consumer = topic_consumer(self.broker, MEMORY_PROACTIVITY, group_id=group_id,
                                  from_beginning=from_beginning, client_id=self.client_id,
                                  security=self.kafka_security, connect_timeout=self.connect_timeout)
        await self._start(consumer, ConsumeError)
        try:
            async for record in consumer:
                try:
                    candidate = ProactivityCandidate.model_validate_json(record.value or b"")
                except ValidationError:
                    log.warning("skipped a %s record that is not a candidate (offset %d)",
                                MEMORY_PROACTIVITY, record.offset)
                    candidate = None
                if candidate is not None and user_id in (None, candidate.user_id):
                    yield candidate
                if group_id is not None:
                    await consumer.commit({TopicPartition(record.topic, record.partition): record.offset + 1})
        except KafkaError as exc:
            raise ConsumeError(f"consuming {MEMORY_PROACTIVITY} failed: {exc!r}") from exc
        finally:
            await consumer.stop()

    def _track(self, stream: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
        """Remember an open stream, so `close` ends it (and its connection or consumer)."""
        self._streams.add(stream)
        return stream


async def _error_of(response: aiohttp.ClientResponse) -> ApiError:
    """The named error of an error answer (`{"error": ...}`, or its text)."""
    text = await response.text()
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    message = body.get("error", text) if isinstance(body, dict) else text
    retry = response.headers.get("Retry-After")
    try:
        retry_after = float(retry) if retry is not None else None
    except ValueError:
        retry_after = None
    if response.status == 422 and isinstance(body, dict):  # a registry write the worker refused
        reasons = [str(c.get("reason") or "") for c in body.get("commands", []) if isinstance(c, dict)]
        reasons = [r for r in reasons if r]
        return Rejected(422, "; ".join(reasons)[:500] or str(message)[:500], retry_after, reasons)
    return api_error(response.status, str(message)[:500], retry_after)
