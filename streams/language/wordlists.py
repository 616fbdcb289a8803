"""Word lists of the language rules, read once from `streams/language/data/<name>.txt`.

A list file holds words separated by spaces or line breaks; a line starting with `#` is a
comment (where the list comes from, why it differs from its neighbours, who reads it). Adding a
word is an edit of the file alone; adding a list is a new file and a `word_list("<name>")` call
where a rule reads it.
"""
from __future__ import annotations

from functools import cache
from importlib.resources import files

from streams.errors import MemstreamError


class UnknownWordList(MemstreamError, LookupError):
    """A word list asked for by a name that has no file under `streams/language/data/`."""


@cache
def word_list(name: str) -> frozenset[str]:
    """The words of `data/<name>.txt` (comments left out), read on the first call only."""
    return frozenset(word_sequence(name))


@cache
def word_sequence(name: str) -> tuple[str, ...]:
    """The words of `data/<name>.txt` in file order (comments left out): for lists whose order
    matters (a regex alternation tried left to right)."""
    path = files("streams.language").joinpath("data").joinpath(f"{name}.txt")
    if not path.is_file():
        raise UnknownWordList(f"no word list {name!r} under streams/language/data/")
    return tuple(word for line in path.read_text("utf-8").splitlines()
                 if not line.lstrip().startswith("#") for word in line.split())
