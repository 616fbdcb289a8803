"""Every Grafana panel queries metrics that a running worker exports (issue 6 item 6).

A real worker on the embedded broker processes a short conversation; its /metrics is scraped
and every panel expression of every dashboard in grafana/dashboards/ is parsed with a PromQL
parser. Each series a selector names must be one that Prometheus would store from the scrape:
`<name>` of a gauge, `<name>_total` of a counter, `<name>_bucket|_sum|_count` of a histogram.
A labelled metric with no samples yet still exposes its `# HELP`/`# TYPE` lines and counts as
exported. That every query also returns data, evaluated by a real Prometheus after a replay, is
`tests/integration/test_prometheus.py`.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import promql_parser
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import PARTITIONS, auth_headers, make_turn, produce, unique_user, wait_processed
from topics.names import CHAT_TURNS, MEMORY_CANDIDATES, MEMORY_COMMANDS
from topics.turns import Role, Turn

pytestmark = pytest.mark.integration

DASHBOARDS = sorted((Path(__file__).parents[2] / "grafana" / "dashboards").glob("*.json"))
EXPECTED_DASHBOARDS = {"pipeline", "decisions", "query", "sinks", "providers"}

# The series names Prometheus stores for one metric family of the exposition, by its type.
_SERIES_SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("", "_sum", "_count"),
    "info": ("_info",),
    "stateset": ("",),
    "unknown": ("",),
}


@dataclass(frozen=True)
class Selector:
    dashboard: str
    panel: str
    expr: str
    name: str | None


def exported_series(exposition: str) -> set[str]:
    """Every series name a Prometheus scrape of `exposition` can be queried by."""
    names: set[str] = set()
    for family in text_string_to_metric_families(exposition):
        names.update(family.name + suffix for suffix in _SERIES_SUFFIXES[family.type])
    return names


def selector_names(expr: str) -> list[str | None]:
    """The metric name of every vector selector in `expr` (None: selected without a name)."""
    found: list[str | None] = []

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node.name or _name_matcher(node))

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def _name_matcher(node: promql_parser.VectorSelector) -> str | None:
    for matcher in node.matchers.matchers:
        if matcher.name == "__name__" and matcher.op == promql_parser.MatchOp.Equal:
            return matcher.value
    return None


def panel_selectors(dashboard: dict, label: str) -> list[Selector]:
    """Every selector of every target of every panel (rows' nested panels included)."""
    panels = list(dashboard.get("panels", []))
    out: list[Selector] = []
    while panels:
        panel = panels.pop(0)
        panels.extend(panel.get("panels", []))
        for target in panel.get("targets", []):
            expr = target.get("expr", "")
            assert expr, f"{label}: panel {panel.get('title')!r} has a target without a PromQL expr"
            out += [Selector(label, panel.get("title", "?"), expr, name) for name in selector_names(expr)]
    return out


def missing(selectors: list[Selector], exported: set[str]) -> list[str]:
    """What each selector names that the scrape does not export, as readable lines."""
    return [f"{s.dashboard} / {s.panel!r}: {s.name or '<no metric name>'} not exported (in {s.expr})"
            for s in selectors if s.name not in exported]


def load(path: Path) -> dict:
    return json.loads(path.read_text())


CONVERSATION = [
    ("user", "I adopted a dog named Luna last year."),
    ("user", "I work as a nurse at the Mercy hospital in Boston."),
    ("user", "I adopted a dog named Luna last year."),  # a repeat: dedup updates, never duplicates
    ("user", "My sister Emma lives in Denver."),
    ("assistant", "Great, we decided to book the vet visit for Luna on Friday; next step is the reminder."),
]


def conversation(user: str) -> list[Turn]:
    turns = []
    for i, (role, text) in enumerate(CONVERSATION):
        turn = make_turn(user, str(i), text, ts=f"2024-05-01T10:{i:02d}:00+00:00")
        turns.append(turn.model_copy(update={"role": Role(role), "speaker": "Ava" if role == "assistant" else "Ana"}))
    return turns


async def scrape(api_url: str) -> str:
    async with aiohttp.ClientSession(headers=auth_headers()) as session:  # /metrics: admin key
        async with session.get(api_url + "/metrics") as response:
            assert response.status == 200, await response.text()
            return await response.text()


@pytest.fixture(scope="module")
def exposition(worker) -> str:
    """/metrics of the shared worker after it processed a short conversation."""
    turns = conversation(unique_user("dash"))
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    return asyncio.run(scrape(worker.api_url))


def test_the_five_dashboards_exist_with_queries():
    assert {p.stem for p in DASHBOARDS} == EXPECTED_DASHBOARDS
    for path in DASHBOARDS:
        dashboard = load(path)
        assert dashboard["uid"] and dashboard["title"]
        assert panel_selectors(dashboard, path.stem), f"{path.name} has no queries"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_every_panel_names_an_exported_metric(path: Path, exposition: str):
    if path.stem == "sinks" and importlib.util.find_spec("sinks.metrics") is None:
        pytest.skip("sinks/metrics.py does not exist yet, so the worker cannot export sink metrics")
    selectors = panel_selectors(load(path), path.stem)
    problems = missing(selectors, exported_series(exposition))
    assert not problems, "\n".join(problems)


def test_the_replay_moved_the_decision_metrics(exposition: str):
    """The scrape is of a worker that did the work, not an idle one."""
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(exposition) for s in family.samples}
    assert samples[("memstream_semantic_creates_total", ())] >= 1
    assert samples[("memstream_stage_records_total", (("stage", "ingest"),))] >= len(CONVERSATION)
    assert samples[("memstream_stage_duration_seconds_count", (("stage", "dedup"),))] >= 1
    assert sum(value for (name, _), value in samples.items()
               if name == "memstream_embed_duration_seconds_count") >= 1


def lag_samples(exposition: str) -> dict[tuple[str, str], float]:
    return {(s.labels["topic"], s.labels["partition"]): s.value
            for family in text_string_to_metric_families(exposition)
            if family.name == "memstream_consumer_lag_records" for s in family.samples}


def test_consumer_lag_is_reported_per_input_partition_and_is_zero_at_rest(worker, exposition: str):
    """The lag timer covers every input partition the worker holds (no changelog topics) and,
    once everything produced was consumed, reads 0 on each."""
    inputs = {CHAT_TURNS, MEMORY_CANDIDATES, MEMORY_COMMANDS}
    # The timer refreshes every METRICS_LAG_INTERVAL_SECONDS (5 s): 120 s only guards a hang.
    deadline = time.monotonic() + 120
    while True:
        lags = lag_samples(asyncio.run(scrape(worker.api_url)))
        if {topic for topic, _ in lags} >= inputs and all(v == 0 for v in lags.values()):
            break
        assert time.monotonic() < deadline, f"consumer lag samples: {lags}"
        time.sleep(0.5)  # polling a periodically refreshed gauge: there is no event to await
    assert not [topic for topic, _ in lags if "changelog" in topic], lags
    assert {p for topic, p in lags if topic == CHAT_TURNS} == {str(p) for p in range(PARTITIONS)}


def test_the_checker_rejects_what_the_worker_does_not_export(exposition: str):
    """A panel naming a missing metric, or a suffix its type does not have, is reported."""
    exported = exported_series(exposition)
    bad = {
        "sum(rate(memstream_no_such_metric_total[5m]))": "memstream_no_such_metric_total",
        "rate(memstream_turns_total_bucket[5m])": "memstream_turns_total_bucket",  # a counter
        "histogram_quantile(0.9, rate(memstream_stage_duration_seconds[5m]))":  # no suffix
            "memstream_stage_duration_seconds",
        "memstream_consumer_lag_records_total": "memstream_consumer_lag_records_total",  # a gauge
        'sum({__name__="memstream_gone"})': "memstream_gone",
    }
    for expr, name in bad.items():
        dashboard = {"panels": [{"title": "bad", "targets": [{"expr": expr}]}]}
        assert missing(panel_selectors(dashboard, "test"), exported) == [
            f"test / 'bad': {name} not exported (in {expr})"]
    good = {"panels": [{"title": "ok", "targets": [{"expr": "sum(memstream_consumer_lag_records)"}]}]}
    assert missing(panel_selectors(good, "test"), exported) == []
