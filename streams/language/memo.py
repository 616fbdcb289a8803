"""Memos of the write rules' pure functions of one text, so a turn's sentences are read once.

The trigger and the extractor read the same turn: each splits it into sentences, cleans every
sentence, reads its content signals, looks for secrets and an entity key. Measured on LoCoMo
conv-30 (`bench locomo --offline`), `clean_sentence` ran 2.8 times per distinct sentence,
`sentence_signals` 2.7 times, `find_secrets` 1.9 times: a third of the rules' time went to
reading again what had been read. A memo keeps the latest `TEXT_MEMO_SIZE` answers of each.

Only functions of the text alone (or of a turn's sentences, `texts_memo`) are memoised (no
clock, no settings), and only immutable answers are kept (strings, frozen dataclasses, tuples),
so a memoised call answers exactly as the function would.

The memos hold texts of recent turns in memory, as the sealed tables' caches of opened values
do: at most `TEXT_MEMO_SIZE` texts of at most `MEMO_MAX_CHARS` each (a longer one, such as a
hostile turn, is read afresh every time), so a few MB at worst. A purge empties them
(`forget_texts` for a user, `clear_memos` for one memory; called by `streams.memory.purge`), so
nothing of a purged user's turns or a purged memory's summary stays readable in the worker's
memory through them; other caches of texts that know whose texts they hold
(`streams.write.contextual.TextVectors`) forget a purged user's with them (`on_forget`).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Concatenate, ParamSpec, TypeVar

TEXT_MEMO_SIZE = 1024
"""Answers each memo keeps (oldest dropped first): the sentences of a drained batch of turns."""
MEMO_MAX_CHARS = 1000
"""Longer texts are not memoised."""

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
_MEMOS: list[Callable[[], None]] = []
_FORGETS: list[Callable[[str | None], None]] = []


def text_memo(fn: Callable[Concatenate[str, P], R]) -> Callable[Concatenate[str, P], R]:
    """`fn` (a pure function of a text and hashable options, whose answer is immutable)
    memoised for texts of at most `MEMO_MAX_CHARS`."""
    return _memo(fn, len)


def texts_memo(fn: Callable[Concatenate[tuple[str, ...], P], R]) -> Callable[Concatenate[tuple[str, ...], P], R]:
    """`text_memo` for a pure function of several texts (a turn's cleaned sentences), memoised
    while they hold at most `MEMO_MAX_CHARS` together."""
    return _memo(fn, lambda texts: sum(map(len, texts)))


def _memo(fn: Callable[Concatenate[T, P], R], chars: Callable[[T], int]) -> Callable[Concatenate[T, P], R]:
    """`fn` memoised (emptied by `clear_memos`) for first arguments of at most `MEMO_MAX_CHARS`
    by `chars`; a longer one is read afresh every time."""
    memoised = lru_cache(maxsize=TEXT_MEMO_SIZE)(fn)
    _MEMOS.append(memoised.cache_clear)

    @wraps(fn)
    def call(first: T, *args: P.args, **kwargs: P.kwargs) -> R:
        if chars(first) > MEMO_MAX_CHARS:
            return fn(first, *args, **kwargs)
        return memoised(first, *args, **kwargs)
    return call


def on_forget(forget: Callable[[str | None], None]) -> None:
    """Have `forget_texts(user_id)` call `forget(user_id)` too: for a cache of texts that is
    not a `text_memo` and knows whose texts it holds (None: everyone's)."""
    _FORGETS.append(forget)


def forget_texts(user_id: str | None = None) -> None:
    """Empty every memo, and have the caches of `on_forget` forget `user_id`'s texts (every
    user's when None): a purge of the user, after which no text of theirs stays in them."""
    clear_memos()
    for forget in _FORGETS:
        forget(user_id)


def clear_memos() -> None:
    """Empty every memo (a purge of one memory: they may hold its summary). The caches of
    `on_forget` hold no stored memory's summary (`streams.write.contextual.TextVectors`)."""
    for clear in _MEMOS:
        clear()
