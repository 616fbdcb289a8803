"""A `metrics` key reads /metrics and nothing else: what Prometheus holds cannot read or change
a user's memories."""
from __future__ import annotations

import pytest

from streams.api import auth


def test_a_metrics_key_reads_metrics_and_nothing_else():
    scraper = auth.Principal("prometheus", "metrics")
    auth.check_route(scraper, "/metrics", None)
    for path, user in [("/v1/users/ana/memories", "ana"), ("/v1/users/ana/query", "ana"),
                       ("/v1/users/ana/events", "ana"), ("/openapi.json", None), ("/table/", None)]:
        with pytest.raises(auth.AccessDenied, match="only read /metrics"):
            auth.check_route(scraper, path, user)
    assert not scraper.may_act_for("ana") and not scraper.is_admin


def test_a_metrics_key_entry_is_accepted():
    key = auth.new_key()
    entry = auth.entry_for(key, "prometheus", "metrics")
    assert auth.KeyRing([entry]).principal(key) == auth.Principal("prometheus", "metrics")
