"""docs/configuration.md is made from the settings model (streams/settings/docs.py).

The checked-in page is what `python -m streams.settings.docs` makes now, so every setting is
documented once, with the default and the description the code has, and a setting that no longer
exists leaves the page with it.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from streams.settings import Settings, UnknownSettingError, section_name_of, sections
from streams.settings.docs import markdown

DOCS = Path(__file__).parents[3] / "docs"
CONFIGURATION = DOCS / "configuration.md"
ROW = re.compile(r"^\| `([A-Z0-9_]+)` \|", re.MULTILINE)


def test_docs_configuration_md_is_made_from_the_settings():
    assert CONFIGURATION.read_text(encoding="utf-8") == markdown(), (
        "docs/configuration.md is out of date: "
        "python -m streams.settings.docs > docs/configuration.md")


def test_every_setting_is_documented_once_and_nothing_else_is():
    rows = ROW.findall(CONFIGURATION.read_text(encoding="utf-8"))
    names = [name.upper() for model in sections().values() for name in model.model_fields]
    assert sorted(rows) == sorted(names), (
        f"missing: {sorted(set(names) - set(rows))}, not settings: {sorted(set(rows) - set(names))}")
    assert len(rows) == len(set(rows)), [row for row in rows if rows.count(row) > 1]


def test_every_setting_has_a_description():
    undescribed = [name for model in sections().values()
                   for name, field in model.model_fields.items() if not field.description]
    assert not undescribed, undescribed


def test_every_section_has_a_title_and_an_about_and_no_name_is_in_two_sections():
    seen: dict[str, str] = {}
    for anchor, model in sections().items():
        assert model.title and model.about, anchor
        for name in model.model_fields:
            assert name not in seen, f"{name} in {seen.get(name)} and {anchor}"
            seen[name] = anchor
    assert set(sections()) == set(Settings.model_fields)


def test_a_flat_name_finds_its_section_and_an_unknown_one_is_an_error():
    assert section_name_of("EPISODIC_AUTO_UPDATE") == "dedup"
    assert section_name_of("episodic_cooldown_turns") == "episodic"
    assert section_name_of("bedrock_embed_dimensions") == "embedding"
    assert section_name_of("bedrock_model_id") == "llm"
    settings = Settings(memory_context_topk=7, retrieval_mode="dense")
    assert (settings.read.memory_context_topk, settings.read.retrieval_mode) == (7, "dense")
    assert settings.with_values(memory_cap=9).lifecycle.memory_cap == 9
    with pytest.raises(UnknownSettingError, match="memroy_cap"):
        section_name_of("memroy_cap")
    with pytest.raises(ValueError, match="memroy_cap"):
        Settings(memroy_cap=1)


def test_sections_are_frozen():
    settings = Settings()
    with pytest.raises(ValueError):
        settings.lifecycle.memory_cap = 1  # type: ignore[misc]
    with pytest.raises(ValueError):
        settings.read = settings.read  # type: ignore[misc]


def test_memstream_settings_markdown_prints_the_page():
    from typer.testing import CliRunner

    from streams.cli import main as cli

    shown = CliRunner().invoke(cli.app, ["settings", "--markdown"])
    assert shown.exit_code == 0, shown.output
    assert shown.output == markdown()
