"""memstream's settings: one frozen model per concern, read from the environment.

`Settings` holds the sections (`settings.read`, `settings.lifecycle`, `settings.kafka`, …); a
stage or module receives the section it needs, never the whole. docs/configuration.md lists every
variable, made from these models by `python -m streams.settings.docs`.

This package is a leaf: it imports nothing of memstream but `streams.errors`, so any module may
import it.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

from streams.errors import MemstreamError
from streams.settings.api import ApiSettings
from streams.settings.aws import AwsSettings
from streams.settings.consent import ConsentSettings
from streams.settings.dedup import DedupSettings
from streams.settings.embedding import EmbeddingSettings
from streams.settings.episodic import EpisodicSettings
from streams.settings.input import InputSettings
from streams.settings.kafka import KafkaSettings
from streams.settings.lifecycle import LifecycleSettings
from streams.settings.llm import LlmSettings
from streams.settings.observability import ObservabilitySettings
from streams.settings.privacy import PrivacySettings
from streams.settings.proactivity import ProactivitySettings
from streams.settings.read import ReadSettings
from streams.settings.section import Section
from streams.settings.sinks import SinksSettings
from streams.settings.write import WriteSettings

__all__ = [
    "ApiSettings", "AwsSettings", "ConsentSettings", "DedupSettings", "EmbeddingSettings", "EpisodicSettings",
    "InputSettings", "KafkaSettings", "LifecycleSettings", "LlmSettings", "ObservabilitySettings",
    "PrivacySettings", "ProactivitySettings", "ReadSettings", "Section", "Settings", "SinksSettings",
    "UnknownSettingError", "WriteSettings", "get_settings",
]


class UnknownSettingError(MemstreamError, ValueError):
    """A setting name that no section has (a typo would otherwise be ignored silently)."""


class Settings(BaseModel):
    """Every section of the service's settings.

    `Settings()` reads the environment. Keyword arguments set single settings by their flat
    names, whatever their section (`Settings(memory_cap=50, retrieval_mode="dense")`); a whole
    section may be given too (`Settings(read=ReadSettings(...))`). `with_values` is the same
    on an existing instance.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    input: InputSettings = Field(default_factory=InputSettings)
    write: WriteSettings = Field(default_factory=WriteSettings)
    dedup: DedupSettings = Field(default_factory=DedupSettings)
    episodic: EpisodicSettings = Field(default_factory=EpisodicSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    read: ReadSettings = Field(default_factory=ReadSettings)
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    consent: ConsentSettings = Field(default_factory=ConsentSettings)
    proactivity: ProactivitySettings = Field(default_factory=ProactivitySettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    sinks: SinksSettings = Field(default_factory=SinksSettings)
    aws: AwsSettings = Field(default_factory=AwsSettings)
    privacy: PrivacySettings = Field(default_factory=PrivacySettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)

    @model_validator(mode="before")
    @classmethod
    def _sections_of_flat_names(cls, data: Any) -> Any:
        """Route flat keyword settings (`memory_cap=50`) to their sections."""
        if not isinstance(data, dict):
            return data
        routed: dict[str, Any] = {}
        flat: dict[str, dict[str, Any]] = {}
        for name, value in data.items():
            if name in cls.model_fields:
                routed[name] = value
            else:
                flat.setdefault(section_name_of(name), {})[name.lower()] = value
        for section, values in flat.items():
            given = routed.get(section)
            if isinstance(given, Section):  # validated like the rest, not copied over
                routed[section] = type(given).model_validate({**given.model_dump(), **values})
            else:
                model = _section_model(cls.model_fields[section])
                routed[section] = model(**{**(given or {}), **values})
        return routed

    def with_values(self, **values: Any) -> Settings:
        """These settings with some changed, by flat name (`with_values(lifecycle_enabled=False)`);
        each value is validated as when read from the environment."""
        return Settings(**{section: getattr(self, section) for section in Settings.model_fields},
                        **values)


def sections() -> dict[str, type[Section]]:
    """Every section's attribute name on `Settings` and its model, in the model's order."""
    return {name: _section_model(field) for name, field in Settings.model_fields.items()}


def _section_model(field: FieldInfo) -> type[Section]:
    """The model of one field of `Settings`: every field is a section."""
    model = field.annotation
    assert isinstance(model, type) and issubclass(model, Section), f"not a section: {model!r}"
    return model


def section_name_of(name: str) -> str:
    """The section (its attribute on `Settings`) that holds the setting `name`."""
    for section, model in sections().items():
        if name.lower() in model.model_fields:
            return section
    raise UnknownSettingError(f"no setting is called {name!r} (docs/configuration.md lists them)")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
