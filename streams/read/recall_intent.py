"""Recall intent of a query: does it ask about past conversations or events ("what did we
discuss", "remind me", "last week")?

Its time phrase, when it has one, becomes a window of dates in `streams/language/dates.py`
(`time_window`, the one module for date phrases of the write and the read side).
"""
from __future__ import annotations

import re

# `time_window` (streams/language/dates.py) imports dateparser on first use; the read side
# imports it here, as it did before, so its ~1 s import is paid at start, not by the first query
import dateparser.date  # noqa: F401 - imported for its start-up cost (above), not for a name

from streams.language.dates import TIME_PHRASE

RECALL = re.compile(
    r"""\b(?:
        what\s+did\s+(?:we|i|you)\s+(?:discuss|talk|say|decide|agree|plan|do|chat)
      | what\s+(?:have|had)\s+we\s+(?:discussed|talked|decided)
      | (?:do|did)\s+you\s+remember | remember\s+when | remind\s+me
      | last\s+time\s+(?:we|i) | when\s+did\s+(?:we|i)
      | we\s+(?:discussed|talked\s+about|spoke\s+about|chatted\s+about|decided|agreed)
      | when\s+(?:did|was|were) | how\s+long\s+ago | what\s+did\s+\w+\s+do\b
      | (?:our|the)\s+(?:last\s+)?(?:conversation|chat|discussion|session)s?
      | recap | catch\s+me\s+up | earlier\s+today
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)


def has_recall_intent(text: str) -> bool:
    """The query asks about past conversations or events, not (only) stable facts."""
    return bool(RECALL.search(text) or TIME_PHRASE.search(text))
