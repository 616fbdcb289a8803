"""`memstream settings`: the effective settings, or the configuration page."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from streams.settings import get_settings

settings_app = typer.Typer()


@settings_app.command()
def settings(
    markdown: Annotated[bool, typer.Option(
        help="Print docs/configuration.md (every setting, its type, default and meaning) instead.")] = False,
) -> None:
    """Show the effective settings (from the environment; secrets masked)."""
    from pydantic import SecretStr

    from streams.settings import Settings

    if markdown:
        from streams.settings.docs import markdown as configuration_page

        sys.stdout.write(configuration_page())
        return
    current = get_settings()
    for section in Settings.model_fields:
        values = getattr(current, section)
        for name in type(values).model_fields:
            value = getattr(values, name)
            shown = "****" if isinstance(value, SecretStr) and value.get_secret_value() else value
            print(f"{name.upper()}={'' if shown is None else shown}")
