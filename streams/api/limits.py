"""Rate and size limits of the worker's HTTP API.

- Request rate, per API key: a token bucket per key (`API_RATE_PER_SECOND` tokens a second, at
  most `API_RATE_BURST` kept). A request that finds its key's bucket empty is answered 429 with
  `Retry-After` (whole seconds until a token is back) before its handler runs, so a refused
  request has done nothing. Only requests the auth middleware let through are counted (a
  request without a valid key is a 401 and costs nothing); public routes are never limited.
  Limits are per worker: a request forwarded to the user's owner is counted there too.
  `API_RATE_PER_SECOND=0` (the default) turns the limit off.
- Body size: a body over `API_MAX_BODY_BYTES` is a 413; a declared `Content-Length` is refused
  before anything is read, a chunked body when reading passes the limit.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable

from aiohttp import web

from streams.api import auth
from streams.api.views import Handler, Middleware, error
from streams.settings import ApiSettings

Clock = Callable[[], float]


class TokenBucket:
    """`rate` tokens a second, at most `burst` kept; starts full."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.updated = now

    def take(self, now: float) -> float:
        """Take one token: 0.0 when there was one, else the seconds until there will be."""
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class RateLimiter:
    """A token bucket per key. Keys are the hashes of valid API keys, so the buckets are as
    many as the keys configured."""

    def __init__(self, rate: float, burst: int, clock: Clock = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limit needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, TokenBucket] = {}

    def wait(self, key: str) -> float:
        """Take a token of `key`: 0.0 when the request may go on, else seconds to wait."""
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rate, self.burst, now)
        return bucket.take(now)


def retry_after(seconds: float) -> str:
    """A `Retry-After` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))


def rate_limit(limiter: RateLimiter) -> Middleware:
    """429 with `Retry-After` when the caller's key has no token left (after auth: only
    authenticated requests count)."""

    @web.middleware
    async def limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        key = auth.presented_key(request)
        if key is None or auth.PRINCIPAL not in request:
            return await handler(request)  # a public route
        wait = limiter.wait(auth.hash_key(key))
        if wait > 0:
            return web.json_response(
                {"error": f"too many requests with this API key; retry in {retry_after(wait)} s"},
                status=429, headers={"Retry-After": retry_after(wait)})
        return await handler(request)

    return limit


def body_limit(max_bytes: int) -> Middleware:
    """413 for a body over `max_bytes`: at once when its Content-Length says so, else when a
    handler reads past the limit (the request is handed on with `client_max_size=max_bytes`)."""

    @web.middleware
    async def limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.content_length is not None and request.content_length > max_bytes:
            return error(413, f"the body is over {max_bytes} bytes")
        if request.client_max_size != max_bytes:
            request = request.clone(client_max_size=max_bytes)
        return await handler(request)

    return limit


def install(web_app: web.Application, api: ApiSettings, clock: Clock = time.monotonic) -> None:
    """Add the rate limit (when API_RATE_PER_SECOND > 0), then the body limit, at the end of
    the middlewares: after auth, so a request without a valid key is a 401 whatever its rate
    or size."""
    if api.api_rate_per_second > 0:
        limiter = RateLimiter(api.api_rate_per_second, api.api_rate_burst, clock)
        web_app.middlewares.append(rate_limit(limiter))
    web_app.middlewares.append(body_limit(api.api_max_body_bytes))
