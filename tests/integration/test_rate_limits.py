"""Per-key rate limits on a worker over TCP (streams/api/limits.py): one key flooding writes
gets 429 with Retry-After past its burst while another key is served; every accepted write
lands and no refused one does. The rate is so low (one token per 1000 s) that only the burst
counts, whatever the machine's speed."""
from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from streams.api import auth
from tests.integration.conftest import REQUEST_GUARD_S, Worker, unique_user

pytestmark = pytest.mark.integration
FLOODER, OTHER = auth.new_key(), auth.new_key()
BURST = 4
WRITES = 12


async def send(session: aiohttp.ClientSession, method: str, url: str, key: str,
               body: object = None) -> tuple[int, str | None, object]:
    async with session.request(method, url, json=body,
                               headers={"Authorization": f"Bearer {key}"}) as response:
        return response.status, response.headers.get("Retry-After"), await response.json()


def test_a_flooded_key_gets_429_another_key_is_served_and_nothing_is_lost(broker, tmp_path):
    keys = json.dumps([auth.entry_for(FLOODER, "flooder", "admin").model_dump(exclude_none=True),
                       auth.entry_for(OTHER, "other", "admin").model_dump(exclude_none=True)])
    worker = Worker(broker.url, tmp_path / "data", "memstream-rate", tmp_path / "worker.log",
                    env={"MEMSTREAM_API_KEYS": keys, "API_RATE_PER_SECOND": "0.001",
                         "API_RATE_BURST": str(BURST)}).start()
    user = unique_user("rate")
    topics_url = f"{worker.api_url}/v1/users/{user}/blocked-topics"

    async def scenario() -> None:
        timeout = aiohttp.ClientTimeout(total=REQUEST_GUARD_S)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            flood = [send(session, "POST", topics_url + "?wait=1", FLOODER, {"topic": f"hobby{i}"})
                     for i in range(WRITES)]
            reads = [send(session, "GET", topics_url, OTHER) for _ in range(BURST - 1)]
            answers = await asyncio.gather(*flood, *reads)
            writes, others = answers[:WRITES], answers[WRITES:]

            accepted = {f"hobby{i}" for i, (status, _, _) in enumerate(writes) if status == 200}
            refused = [(status, wait) for status, wait, _ in writes if status != 200]
            assert len(accepted) == BURST, writes
            assert len(refused) == WRITES - BURST
            assert all(status == 429 and wait is not None and int(wait) >= 1
                       for status, wait in refused), refused
            assert [status for status, _, _ in others] == [200] * (BURST - 1), others

            # Every accepted write landed, no refused one did.
            status, _, listing = await send(session, "GET", topics_url, OTHER)
            assert status == 200 and sorted(listing["topics"]) == sorted(accepted), listing
            # The flooded key is still refused; public routes are never limited.
            assert (await send(session, "GET", topics_url, FLOODER))[0] == 429
            async with session.get(worker.api_url + "/health") as health:
                assert health.status == 200

    try:
        asyncio.run(scenario())
    finally:
        worker.stop()
