"""Sealed content on the wire: a user's content encrypted with the user's data key.

Every topic memstream writes carries a user's content only inside a `Sealed` value (see
`streams/privacy`): a purge deletes the user's key, and every copy stops opening.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Sealed(BaseModel):
    """Content sealed for `user_id`: by the user's data key, or — for what a web handler sent
    before the user had a key — by the master key ("transit")."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=200)
    by: Literal["user", "transit"] = "user"
    sealed: str = Field(min_length=1)
