"""docs/configuration.md, made from the settings model (`streams.app.settings.Settings`):

    python -m streams.app.settings_docs > docs/configuration.md

Each field's environment variable, type, default and description, in sections by concern.
`SECTIONS` says which field goes where: by name where one is listed, else by the longest
field-name prefix that matches. A field that lands in no section is an error, so a new setting
cannot be left out of the page; tests/unit/docs/test_configuration_docs.py fails when the
checked-in page is not what this makes now. `memstream settings --markdown` prints the same page.
"""
from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import SecretStr
from pydantic.fields import FieldInfo

from streams.errors import MemstreamError
from streams.app.settings import Settings

HEADER = ("<!-- Made by `python -m streams.app.settings_docs > docs/configuration.md` from "
          "streams/app/settings.py: do not edit by hand. -->")


@dataclass(frozen=True)
class Section:
    """One concern's settings: its anchor, title, a line for the reader, and what it holds."""

    anchor: str
    title: str
    about: str
    prefixes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()


SECTIONS: tuple[Section, ...] = (
    Section("kafka", "Kafka, topics and the worker",
            "Where the broker is, how the worker's clients talk to it, and where the worker keeps "
            "its tables. TLS and SASL for a managed Kafka: [kafka-security.md](kafka-security.md).",
            prefixes=("kafka_",),
            names=("app_id", "topic_partitions", "data_dir", "table_store", "embedded_broker_port")),
    Section("input", "Input limits and dead letters",
            "What a record may be before it goes to its dead-letter topic "
            "([architecture.md](architecture.md#bad-input)).",
            prefixes=("max_", "dlq_")),
    Section("write", "Write path: trigger, extraction, policy",
            "What the ingest stage turns a turn into ([architecture.md](architecture.md#write-path)).",
            prefixes=("trigger_", "ingest_"),
            names=("memory_enabled", "semantic_enabled", "episodic_enabled", "buffer_turns",
                   "max_facts_per_turn", "summary_max_chars", "sensitive_categories")),
    Section("dedup", "Dedup, supersede and linking",
            "How the dedup stage decides between a new memory, an update and a supersede, and "
            "which neighbours it links ([architecture.md](architecture.md#dedup)). The bands "
            "default to the embedder's profile; set one only to override it.",
            prefixes=("dedup_", "link_"),
            names=("semantic_auto_update", "semantic_check_low", "episodic_auto_update",
                   "episodic_check_low", "episodic_merge_window_hours", "memory_neighbors_k",
                   "memory_enable_entity_heuristics", "memory_write_rate_limit_per_hour")),
    Section("episodic", "Episodic capture",
            "When a thread's recent turns become an episode "
            "([architecture.md](architecture.md#episodes)).",
            prefixes=("episodic_",)),
    Section("embedder", "Embedder",
            "The model that embeds summaries and queries "
            "([architecture.md](architecture.md#embedders)). Choose it before the first memory: "
            "stored vectors keep the model they were made with.",
            prefixes=("embedder", "embed_", "bedrock_embed_")),
    Section("llm", "LLM (optional)",
            "With none, every decision is made by rules. With one, each call has a time budget "
            "and falls back to the rules ([architecture.md](architecture.md#llm)).",
            prefixes=("llm_", "anthropic_"),
            names=("bedrock_model_id", "memory_tiny_llm_model_id")),
    Section("read", "Read path: retrieval and ranking",
            "How `memory.query` finds, ranks and cuts an answer "
            "([architecture.md](architecture.md#read-path)).",
            prefixes=("rank_", "retrieval_", "query_", "memory_context_"),
            names=("memory_k", "categories_path", "cold_tier_similarity")),
    Section("lifecycle", "Lifecycle: forgetting, consolidation, promotion, insights",
            "The passes that run per user on the event-time watermark "
            "([architecture.md](architecture.md#lifecycle); what forgetting buys and costs: "
            "[forgetting.md](forgetting.md)).",
            prefixes=("lifecycle_", "ttl_", "archive_", "consolidation_", "promotion_",
                      "insight_"),
            names=("purge_after_days", "memory_cap")),
    Section("consent", "Consent for profile changes",
            "Which profile changes wait for the user "
            "([architecture.md](architecture.md#consent)).",
            prefixes=("consent_",)),
    Section("proactivity", "Proactivity",
            "Candidates for reaching out, on `memory.proactivity` "
            "([architecture.md](architecture.md#proactivity)).",
            prefixes=("proactivity_",)),
    Section("api", "HTTP API, auth and server-sent events",
            "The worker's web server, its API keys, limits and event streams "
            "([architecture.md](architecture.md#serving), the routes: [api.md](api.md)).",
            prefixes=("web_", "api_", "sse_"),
            names=("memstream_api_keys", "memstream_api_key", "command_wait_max_seconds")),
    Section("sinks", "Sinks: OpenSearch and S3 Vectors",
            "Copies of `memory.events` to other stores; a sink runs only when its settings are "
            "set ([operations.md](operations.md#sinks)).",
            prefixes=("sink_", "opensearch_", "s3vectors_", "s3v_"), names=("aws_region",)),
    Section("privacy", "Privacy: the master key",
            "The key that wraps every user's data key "
            "([architecture.md](architecture.md#privacy), the operator's steps: "
            "[privacy.md](privacy.md)).",
            names=("memstream_master_key", "master_key_file")),
    Section("observability", "Logs and metrics",
            "What the worker logs and how often it refreshes its metrics "
            "([operations.md](operations.md#observability)).",
            prefixes=("metrics_",), names=("log_level",)),
)


class UnsectionedSettingError(MemstreamError):
    """A settings field that no section of `SECTIONS` takes."""


def section_of(name: str) -> Section:
    """The section a field belongs to: the one naming it, else the longest prefix that matches."""
    for section in SECTIONS:
        if name in section.names:
            return section
    matches = [(len(prefix), section) for section in SECTIONS for prefix in section.prefixes
               if name.startswith(prefix)]
    if not matches:
        raise UnsectionedSettingError(
            f"setting {name!r} is in no section: name it, or a prefix of it, in SECTIONS of "
            "streams/app/settings_docs.py")
    return max(matches, key=lambda match: match[0])[1]


def _text(text: str) -> str:
    """Text as Markdown: a `<` outside code is no HTML tag."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def _cell(text: str) -> str:
    """Text fit for one table cell: one line, no column breaks."""
    return _text(re.sub(r"\s+", " ", text).strip().replace("|", "\\|"))


def _number(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def type_of(field: FieldInfo) -> str:
    """A short reading of a field's type and bounds: `integer ≥ 1`, `one of dense, hybrid`, …"""
    annotation = field.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in get_args(annotation))
    kind = {bool: "true or false", int: "integer", float: "number", str: "text", Path: "path",
            SecretStr: "secret"}.get(annotation, getattr(annotation, "__name__", str(annotation)))
    bounds = {type(item).__name__.lower(): getattr(item, type(item).__name__.lower())
              for item in field.metadata if type(item).__name__ in ("Ge", "Gt", "Le", "Lt")}
    low = (f"≥ {_number(bounds['ge'])}" if "ge" in bounds
           else f"> {_number(bounds['gt'])}" if "gt" in bounds else "")
    high = (f"≤ {_number(bounds['le'])}" if "le" in bounds
            else f"< {_number(bounds['lt'])}" if "lt" in bounds else "")
    return " ".join(part for part in (kind, ", ".join(p for p in (low, high) if p)) if part)


def default_of(field: FieldInfo) -> str:
    """The default as one would write it in the environment; `unset` for none."""
    default = field.default
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    return f"`{_number(default)}`"


def sections() -> list[tuple[Section, list[tuple[str, FieldInfo]]]]:
    """Every section with its fields, in `SECTIONS` order, each in the model's order."""
    grouped: dict[str, list[tuple[str, FieldInfo]]] = {s.anchor: [] for s in SECTIONS}
    for name, field in Settings.model_fields.items():
        grouped[section_of(name).anchor].append((name, field))
    return [(section, grouped[section.anchor]) for section in SECTIONS if grouped[section.anchor]]


def markdown() -> str:
    """docs/configuration.md: every setting, by section."""
    grouped = sections()
    lines = [HEADER, "", "# Configuration", "",
             "Every setting is read from the environment variable of the same name (any case) "
             "when a worker, the CLI or a tool starts. `memstream settings` prints the effective "
             "values (secrets as `****`). "
             "The compose stack's own variables are in "
             "[operations.md](operations.md#compose-variables).", "",
             "Sections:", ""]
    lines += [f"- [{section.title}](#{section.anchor}) ({len(fields)})" for section, fields in grouped]
    lines.append("")
    for section, fields in grouped:
        lines += [f'<a id="{section.anchor}"></a>', "", f"## {section.title}", "",
                  section.about, "", "| variable | type | default | meaning |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| `{name.upper()}` | {_cell(type_of(field))} | {default_of(field)} | "
                  f"{_cell(field.description or '')} |" for name, field in fields]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
