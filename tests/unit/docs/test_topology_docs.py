"""The topics and stages tables of docs/architecture.md are made from the declaration
(streams/app/topology.py, by streams/app/topology_docs.py)."""
from __future__ import annotations

import pytest

from streams.app import topology_docs
from streams.app.topology_docs import ARCHITECTURE, MissingTableMarkers, updated


def test_the_topology_tables_in_architecture_md_are_made_from_the_declaration():
    page = ARCHITECTURE.read_text(encoding="utf-8")
    assert page == updated(page), (
        "the topology tables of docs/architecture.md are out of date: "
        "python -m streams.app.topology_docs")


def test_every_topic_and_stage_has_a_row():
    page = ARCHITECTURE.read_text(encoding="utf-8")
    for row in [*map(topology_docs.topic_row, topology_docs.TOPICS),
                *map(topology_docs.stage_row, topology_docs.STAGES)]:
        assert row in page


def test_a_page_without_the_markers_is_refused():
    with pytest.raises(MissingTableMarkers):
        updated("# Architecture\n\nno tables here\n")
