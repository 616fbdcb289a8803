"""docs/configuration.md is made from the settings model (streams/app/settings_docs.py).

The checked-in page is what `python -m streams.app.settings_docs` makes now, so every setting is
documented once, with the default and the description the code has, and a setting that no longer
exists leaves the page with it.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from streams.app import settings_docs
from streams.app.settings import Settings
from streams.app.settings_docs import SECTIONS, UnsectionedSettingError, markdown, section_of

DOCS = Path(__file__).parents[3] / "docs"
CONFIGURATION = DOCS / "configuration.md"
ROW = re.compile(r"^\| `([A-Z0-9_]+)` \|", re.MULTILINE)


def test_docs_configuration_md_is_made_from_the_settings():
    assert CONFIGURATION.read_text(encoding="utf-8") == markdown(), (
        "docs/configuration.md is out of date: "
        "python -m streams.app.settings_docs > docs/configuration.md")


def test_every_setting_is_documented_once_and_nothing_else_is():
    rows = ROW.findall(CONFIGURATION.read_text(encoding="utf-8"))
    names = [name.upper() for name in Settings.model_fields]
    assert sorted(rows) == sorted(names), (
        f"missing: {sorted(set(names) - set(rows))}, not settings: {sorted(set(rows) - set(names))}")
    assert len(rows) == len(set(rows)), [row for row in rows if rows.count(row) > 1]


def test_every_setting_has_a_description():
    undescribed = [name for name, field in Settings.model_fields.items() if not field.description]
    assert not undescribed, undescribed


def test_the_sections_name_only_settings_and_each_once():
    named = [name for section in SECTIONS for name in section.names]
    assert not set(named) - set(Settings.model_fields), set(named) - set(Settings.model_fields)
    assert len(named) == len(set(named)), named
    anchors = [section.anchor for section in SECTIONS]
    assert len(anchors) == len(set(anchors)), anchors


def test_a_field_goes_to_the_section_naming_it_else_to_its_longest_prefix():
    assert section_of("episodic_auto_update").anchor == "dedup"     # named, though episodic_…
    assert section_of("episodic_cooldown_turns").anchor == "episodic"
    assert section_of("bedrock_embed_dimensions").anchor == "embedder"
    assert section_of("bedrock_model_id").anchor == "llm"
    assert section_of("memory_context_topk").anchor == "read"


def test_a_setting_in_no_section_is_an_error(monkeypatch):
    monkeypatch.setattr(settings_docs, "SECTIONS", ())
    with pytest.raises(UnsectionedSettingError, match="kafka_broker_url"):
        section_of("kafka_broker_url")


def test_memstream_settings_markdown_prints_the_page():
    from typer.testing import CliRunner

    from streams.cli import main as cli

    shown = CliRunner().invoke(cli.app, ["settings", "--markdown"])
    assert shown.exit_code == 0, shown.output
    assert shown.output == markdown()
