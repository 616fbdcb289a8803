"""Labelled counters start at 0 for their known label values, so a quiet one reads 0, not "No data"
(issue 23); the vocabularies they start from are the code's own."""
from __future__ import annotations

from types import SimpleNamespace

from prometheus_client.parser import text_string_to_metric_families

from streams.settings import Settings
from streams.lifecycle.runner import service_passes
from streams.observability import metrics
from streams.pipeline import commands, dedup, ingest


def test_the_stages_and_passes_started_are_the_pipelines():
    assert set(metrics.STAGES) == {ingest.STAGE, dedup.STAGE, commands.STAGE}
    passes = service_passes(Settings().lifecycle, SimpleNamespace(embed=None, llm=None))
    assert set(metrics.LIFECYCLE_PASSES) == {p.name for p in passes}


def test_a_fresh_scrape_has_a_series_for_every_counter_a_dashboard_shows_quiet():
    exposition = metrics.render().decode()
    series = {s.name for family in text_string_to_metric_families(exposition)
              for s in family.samples}
    quiet = ["memstream_dlq_records_total", "memstream_dlq_failures_total",
             "memstream_commands_total", "memstream_policy_blocked_total",
             "memstream_episodic_skips_total", "memstream_lifecycle_errors_total",
             "memstream_lifecycle_redelivered_total", "memstream_lifecycle_transitions_total",
             "memstream_lifecycle_runs_total", "memstream_proactivity_candidates_total",
             "memstream_semantic_updates_total", "memstream_stage_records_total",
             "memstream_turns_total"]
    assert [name for name in quiet if name not in series] == []
    assert 'memstream_commands_total{kind="purge_user"}' in exposition
    assert 'memstream_stage_stalled{stage="dedup"} 0.0' in exposition, "a stage is not stalled until it is"
    # An open label is left empty: Prometheus stores the series without it.
    assert 'memstream_dlq_records_total{reason="",stage="commands"}' in exposition
