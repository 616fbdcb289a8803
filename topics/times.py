"""Event times as the wire schemas accept them.

An event time must carry its zone and fall within `EARLIEST`..`LATEST`: outside them a time is
no chat's, and the times derived from it (the user's clock, TTLs, episodes, a sink's UTC copy)
could fall off `datetime`'s range and fail far from the record that carried it.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime
from pydantic_core import PydanticCustomError

EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(2200, 1, 1, tzinfo=timezone.utc)


def _in_range(value: datetime) -> datetime:
    if not EARLIEST <= value < LATEST:
        raise PydanticCustomError("out_of_range", "time must be from 1900 to 2199 (UTC)")
    return value


EventTime = Annotated[AwareDatetime, AfterValidator(_in_range)]
"""A zoned time from `EARLIEST` up to (not including) `LATEST`."""
