"""Categories config and per-agent allowlists (seed 001 §5, docs/architecture.md#read-path and §8).

The YAML names the categories (system and custom), their context mode, and for each agent the
categories it may read. `CategoryPolicy.allowed` turns a request into the set of categories the
search may touch, and fails closed: an unknown agent, an unknown category or one outside the
agent's allowlist raises, so a request can only ever narrow the allowlist, never widen it.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Iterable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from streams.read.errors import CategoriesConfigError, InvalidQuery, QueryForbidden

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "categories.yaml"


class CategorySpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    context: Literal["all", "rag"] = "rag"
    rag_length: int | None = Field(None, ge=1, description="Items of this category per answer at most.")


class CategoryGroups(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system: list[CategorySpec] = Field(default_factory=list)
    custom: list[CategorySpec] = Field(default_factory=list)


class CategoriesFile(BaseModel):
    """The YAML document as written (seed 001 §5)."""

    model_config = ConfigDict(extra="forbid")

    categories: CategoryGroups
    allowlists: dict[str, list[str]]

    @model_validator(mode="after")
    def _consistent(self) -> "CategoriesFile":
        names = [c.name.casefold() for c in [*self.categories.system, *self.categories.custom]]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"categories defined twice: {duplicated}")
        for agent, allowed in self.allowlists.items():
            unknown = [c for c in allowed if c.casefold() not in names]
            if unknown:
                raise ValueError(f"allowlist of {agent!r} names unknown categories {unknown}")
        return self


class CategoryPolicy:
    """Lookups over one categories file. Category names match case-insensitively."""

    def __init__(self, config: CategoriesFile) -> None:
        specs = [*config.categories.system, *config.categories.custom]
        self._specs = {c.name.casefold(): c for c in specs}
        self._allowlists = {agent: frozenset(c.casefold() for c in allowed)
                            for agent, allowed in config.allowlists.items()}

    @classmethod
    def from_yaml(cls, text: str, source: str = "<string>") -> "CategoryPolicy":
        try:
            data = yaml.safe_load(text)
            return cls(CategoriesFile.model_validate(data))
        except yaml.YAMLError as exc:
            raise CategoriesConfigError(f"{source}: not valid YAML ({exc.__class__.__name__})") from None
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'document'}: {e['msg']}"
                                 for e in exc.errors()[:5])
            raise CategoriesConfigError(f"{source}: {problems}") from None

    @classmethod
    def from_path(cls, path: Path) -> "CategoryPolicy":
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CategoriesConfigError(f"{path.name}: cannot read ({exc.strerror})") from None
        return cls.from_yaml(text, path.name)

    @property
    def agents(self) -> list[str]:
        return sorted(self._allowlists)

    def spec(self, category: str) -> CategorySpec | None:
        return self._specs.get(category.casefold())

    def allowed(self, agent: str, categories: Iterable[str] | None = None,
                category_filter: str | None = None) -> frozenset[str]:
        """The categories (casefolded) a query of `agent` may read.

        `categories` (the request's list) and `category_filter` (filters.category) narrow the
        allowlist; naming anything outside it is an error, never silently dropped.
        """
        allowlist = self._allowlists.get(agent)
        if allowlist is None:
            raise QueryForbidden(f"unknown agent {agent!r}: no allowlist in the categories config")
        chosen = allowlist
        for asked in ([*categories] if categories is not None else []) + (
                [category_filter] if category_filter is not None else []):
            key = asked.casefold()
            if key not in self._specs:
                raise InvalidQuery(f"unknown category {asked!r}")
            if key not in allowlist:
                raise QueryForbidden(f"category {asked!r} is not in the allowlist of agent {agent!r}")
        if categories is not None:
            chosen = chosen & {c.casefold() for c in categories}
        if category_filter is not None:
            chosen = chosen & {category_filter.casefold()}
        return chosen


@lru_cache(maxsize=4)
def load_policy(path: Path | None = None) -> CategoryPolicy:
    """The policy of `path` (default: the repository's categories.yaml), read once per process."""
    return CategoryPolicy.from_path(path or DEFAULT_PATH)
