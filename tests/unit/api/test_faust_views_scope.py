"""Faust's own views answer only an admin key for every user (issue 48, finding 6): a raw table
entry names no category and a lifecycle entry lists user ids, so no user or category check can
filter them; an admin key limited to some users gets a 403, as an agent key does."""
from __future__ import annotations

import pytest

from streams.api.hardening import is_faust_view
from tests.integration.conftest import registered_routes
from tests.unit.api.worker_web import ADMIN, ANA_ADMIN, NARROW, served

FAUST_VIEWS = ["/", "/router/", "/router/topics", "/router/users/", "/router/users/fay/",
               "/table/", "/table/users/", "/table/users/fay/", "/table/lifecycle/", "/table/lifecycle/0/",
               "/table/nosuch/", "/table/nosuch/k/"]


async def test_a_user_restricted_admin_key_reads_no_faust_view(tmp_path):
    async with served(tmp_path) as web:
        for path in FAUST_VIEWS:
            for key in (ANA_ADMIN, NARROW):
                answer = await web.client.get(path, headers={"Authorization": f"Bearer {key}"})
                body = await answer.json()
                assert answer.status == 403, (path, key == ANA_ADMIN, answer.status, body)
                assert "error" in body and "fay" not in str(body), body


async def test_an_admin_key_for_every_user_still_reads_them(tmp_path):
    async with served(tmp_path) as web:
        bearer = {"Authorization": f"Bearer {ADMIN}"}
        answer = await web.client.get("/table/", headers=bearer)
        assert answer.status == 200 and "users" in {t["name"] for t in await answer.json()}
        answer = await web.client.get("/table/users/", headers=bearer)
        assert answer.status == 200 and (await answer.json())["name"] == "users"
        assert (await web.client.get("/table/nosuch/k/", headers=bearer)).status == 404


async def test_the_restricted_admin_keeps_its_own_users_routes(tmp_path):
    async with served(tmp_path) as web:
        web.known("ana")
        assert await web.status_of_stream("ana", ANA_ADMIN) == 200
        assert await web.status_of_stream("fay", ANA_ADMIN) == 403


@pytest.mark.parametrize(("method", "path"), registered_routes())
def test_every_route_is_a_user_route_a_service_route_or_a_faust_view(method, path):
    """Each route passes one rule (`streams.api.auth.check_route`, then the Faust views' guard):
    a `/v1/users/{user_id}` route needs a key that may act for the user (then its scope), the
    Faust views an admin key for every user, and the rest are named."""
    service = {"/health", "/admin", "/admin/static/{filename}", "/metrics", "/openapi.json"}
    assert path.startswith("/v1/users/{user_id}") or path in service or is_faust_view(path), path
