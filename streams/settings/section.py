"""What every settings section is: frozen, read from the environment, one variable per field.

A field's environment variable is its name in any case (`RANK_W_IMPORTANCE` sets
`ReadSettings.rank_w_importance`): the name a knob has in the environment, the docs and the code
is one name, so a search finds every use.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic_settings import BaseSettings, SettingsConfigDict


class Section(BaseSettings):
    """One concern's settings; `title` and `about` head its part of docs/configuration.md."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="forbid", frozen=True)

    title: ClassVar[str] = ""
    about: ClassVar[str] = ""
