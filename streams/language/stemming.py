"""The one stemmer of the language rules: Snowball English (PyStemmer), as bm25s uses it.

Read by the duplicate checks (streams/memory/dedup.py: "hiking" and "hikes" are one word there)
and the lexical index's tokens (streams/memory/lexical_index.py, which must stem as bm25s does).
"""
from __future__ import annotations

from typing import Callable

import Stemmer

stem_words: Callable[[list[str]], list[str]] = Stemmer.Stemmer("english").stemWords
"""The Snowball English stems of a list of words, in order (["hiking", "dogs"] → ["hike", "dog"])."""
