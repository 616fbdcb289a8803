"""Typed attributes on a Faust app, for the web views.

A Faust web view has only its Faust app (`self.app`), so the worker hangs its own objects on
that app for the views to find: the `MemstreamApp` (`MemstreamApp.of`,
`streams.app.factory`) and the web layer's state (`WebState.of`, `streams.api.state`). Faust's
`App` declares no such attributes; an `AppSlot` is one of them with its type: set with a value
of that type, read back as that type.
"""
from __future__ import annotations

from typing import Generic, TypeVar, cast

T = TypeVar("T")


class AppSlot(Generic[T]):
    """The attribute `name` of a Faust app (or of anything standing in for one in a test)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def attach(self, faust_app: object, value: T) -> None:
        """Make `value` what `of(faust_app)` returns."""
        setattr(faust_app, self.name, value)

    def of(self, faust_app: object) -> T:
        """The value `attach` gave `faust_app` (AttributeError if none was)."""
        # only `attach` sets the attribute, with a T
        return cast(T, getattr(faust_app, self.name))

