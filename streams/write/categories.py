"""The category of a fact: one of SPEC §8's defaults (Finance, Budget, Goals, Personal,
Education, Conversation_Summary, Other), by keyword rules."""
from __future__ import annotations

import re

_CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(r"\b(?:" + kw + r")", re.I)) for name, kw in (
        ("Budget", r"budget|spend|spending|afford|expenses?\b|saving(?:s)? up|cheap|expensive"),
        ("Finance", r"money|salary|paid\b|pay\b|price|cost|bank|invest|stock|loan|mortgage|"
                    r"debt|tax|dollars?|euros?|savings|income|credit|\$|€|£"),
        ("Education", r"school|college|universit|degree|class(?:es)?\b|course|stud(?:y|ied|ying)|"
                      r"exam|learn|teacher|student|education|edu\b|graduat|thesis|homework"),
        ("Goals", r"goal|plan|dream|aim\b|hope to|want to|going to|gonna|career|aspir|"
                  r"resolution|training for|working towards"),
        ("Personal", r"famil|kids?\b|child|dog|cat\b|pet|friend|husband|wife|partner|love|like|"
                     r"hobby|live|born|birthday|paint|music|book|hik|camp|travel|home|feel|"
                     r"enjoy|art|sport|run|swim|garden|cook"),
    )
)


def categorise(text: str) -> str:
    """Best-matching SPEC §8 default category, "Other" when none matches."""
    counts = [(len(p.findall(text)), -i, name) for i, (name, p) in enumerate(_CATEGORIES)]
    best = max(counts)
    return best[2] if best[0] else "Other"
