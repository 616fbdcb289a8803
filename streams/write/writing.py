"""Writing constraints of memory summaries (seed 001 §9): a validator and a normaliser.

Semantic guard: "a complete, self-contained, third-person summary with no pronouns; neutral tone;
1–2 sentences; ≤ 280 chars". Episodic guard: "past tense; 1–2 sentences; focus on what was
discussed/decided/done". Validator: "reject/trim outputs violating length or empty after
normalisation". Acceptance: ≥ 95 % of new items pass on the first pass (`writing_pass_rate`).

`validate_summary` names what a summary violates (an empty list means it passes);
`normalise_summary` repairs what can be repaired without understanding the text (whitespace,
emoji, capitalisation, terminal punctuation, length at a word boundary, a third sentence).
What it cannot repair — first/second person, a leading dangling pronoun, leftover markup — is
for the writer to avoid and for the caller to reject.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from streams.language.splitting import split_sentences

MAX_CHARS = 280
MAX_SENTENCES = 2
MIN_WORDS = 3

EMPTY = "empty"
TOO_SHORT = "too_short"
TOO_LONG = "too_long"
TOO_MANY_SENTENCES = "too_many_sentences"
FIRST_OR_SECOND_PERSON = "first_or_second_person"
DANGLING_PRONOUN = "dangling_pronoun"
NOT_CAPITALISED = "not_capitalised"
NO_TERMINAL_PUNCTUATION = "no_terminal_punctuation"
MARKUP = "markup"
MULTILINE = "multiline"
QUESTION = "question"

_FIRST_SECOND = re.compile(
    r"(?<![\w'’.-])(?:I|I['’](?:m|ve|ll|d)|me|my|mine|myself|we|we['’](?:re|ve|ll|d)|us|our|ours|"
    r"ourselves|you|you['’](?:re|ve|ll|d)|your|yours|yourself|yourselves)(?![\w'’-]|\.\w)", re.I,
)
_US_ABBREV = re.compile(r"(?<![\w.])U\.?S\.?(?:A\.?)?(?![\w])")  # "the US" is not "us"
# A summary may not *open* on a pronoun: it would not be self-contained.
_DANGLING = re.compile(
    r"^(?:it|it['’]s|its|this|that|these|those|they|they['’](?:re|ve|ll|d)|them|their|he|she|"
    r"he['’]s|she['’]s|his|her|him)\b", re.I,
)
_EXPLETIVE_IT = re.compile(  # "It feels like …", "It's important to …": no antecedent needed
    r"^it(?:['’]s| is| was| has been|['’]s been| feels| felt| seems| seemed| looks| looked|"
    r" would be| will be)\s+(?:(?:so|really|very|super|pretty|such|always|been|a|an|"
    r"\w+(?:ly)?)\s+){0,3}?(?:to|that|how|when|like|being|since|as if|knowing|seeing|having|"
    r"getting|watching)\b", re.I,
)
_MARKUP = re.compile(r"\[(?:shares an image|image|img)\b|<[a-z/][^>]*>|\x01|\x02|\x03|\{\w*\}", re.I)
_EMOJI = re.compile("[\U0001F000-\U0001FFFF\u2600-\u27BF\uFE0F\u200d]+")
_FINAL_MARKS = re.compile(r"(?<![.!?…])[.!?…]+$")
"""The marks that end a text, matched from where their run starts (from every mark of a long run
not at the end, the old form was quadratic in the run)."""
_TRAILING_JOINERS = re.compile(
    r"(?:[\s,;:–—-]+(?:and|but|or|so|because|which|that|to|with|the|a|an|of|in|for|on|at|as|"
    r"like|who|when|while|from|into|by|than|then|my|his|her|their|its|is|are|was|were))+\s*$",
    re.I,
)


def split_summary_sentences(text: str) -> list[str]:
    """Sentences of a summary, as the extractor splits a turn's (`split_sentences`, a
    library's): abbreviations and initials ("J.K. Rowling", "Dr. Li", "Sept. 9") do not end
    one."""
    return split_sentences(text)


def validate_summary(summary: str, memory_type: str = "semantic", *,
                     max_chars: int = MAX_CHARS) -> list[str]:
    """Violations of the seed 001 §9 writing constraints (empty list: the summary passes).

    `memory_type` is semantic | episodic | procedural | …; procedural summaries may be longer
    lists of steps but still obey the length and person rules. Checks: empty, too_short (< 3
    words), too_long (> `max_chars`), too_many_sentences (> 2, semantic/episodic), multiline,
    first_or_second_person pronouns, dangling_pronoun (opens on it/they/she/…: not
    self-contained), not_capitalised, no_terminal_punctuation, question, markup (leftover image
    markers, tags, placeholders).
    """
    s = summary.strip()
    if not s:
        return [EMPTY]
    problems: list[str] = []
    if len(s.split()) < MIN_WORDS:
        problems.append(TOO_SHORT)
    if len(s) > max_chars:
        problems.append(TOO_LONG)
    if "\n" in s:
        problems.append(MULTILINE)
    if memory_type != "procedural" and len(split_summary_sentences(s)) > MAX_SENTENCES:
        problems.append(TOO_MANY_SENTENCES)
    if _FIRST_SECOND.search(_US_ABBREV.sub("", s)):
        problems.append(FIRST_OR_SECOND_PERSON)
    if _DANGLING.match(s) and not _EXPLETIVE_IT.match(s):
        problems.append(DANGLING_PRONOUN)
    if not (s[0].isupper() or s[0].isdigit() or s[0] in "\"'“‘"):
        problems.append(NOT_CAPITALISED)
    if s.endswith("?"):
        problems.append(QUESTION)
    elif not s.rstrip("\"'”’)").endswith((".", "!")):
        problems.append(NO_TERMINAL_PUNCTUATION)
    if _MARKUP.search(s):
        problems.append(MARKUP)
    return problems


def trim_to(text: str, max_chars: int) -> str:
    """Cut `text` to fit `max_chars` (room kept for a final period) at a word boundary, dropping
    a dangling joiner ("… and", "… with the")."""
    if len(text) + 1 <= max_chars:
        return text
    cut = text[: max_chars - 1]
    if " " in cut and not text[max_chars - 1:max_chars].isspace():
        cut = cut.rsplit(" ", 1)[0]
    cut = _TRAILING_JOINERS.sub("", cut).rstrip(" ,;:–—-(\"'")
    return cut


def normalise_summary(summary: str, max_chars: int = MAX_CHARS, *,
                      max_sentences: int = MAX_SENTENCES) -> str:
    """Repair what can be repaired: one line, no emoji, tidy spaces and punctuation, at most
    `max_sentences` sentences, at most `max_chars` (cut at a word boundary), capitalised, ending
    with a period (a final "!" becomes "."). Returns "" when nothing is left."""
    s = _EMOJI.sub("", summary)
    s = re.sub(r"\s+", " ", s).strip().strip("-–—:;, ")
    s = re.sub(r"\s+([,.!?;:])", r"\1", s)
    s = re.sub(r"([,;:])(?=[^\s\d])", r"\1 ", s)
    s = re.sub(r"([!?.])[!?.]+", r"\1", s)
    if max_sentences:
        s = " ".join(split_summary_sentences(s)[:max_sentences])
    s = _FINAL_MARKS.sub("", s).rstrip(" ,;:-–—")
    s = trim_to(s, max_chars)
    s = _FINAL_MARKS.sub("", s).rstrip(" ,;:-–—")
    return (s[:1].upper() + s[1:] + ".") if s else ""


def writing_pass_rate(facts: Iterable[Any]) -> float:
    """Share of `facts` (objects with `summary` and `type`, or plain strings) whose summary
    passes `validate_summary` as written; 1.0 for no facts."""
    total = passed = 0
    for fact in facts:
        summary = fact if isinstance(fact, str) else fact.summary
        kind = "semantic" if isinstance(fact, str) else getattr(fact, "type", "semantic")
        total += 1
        passed += not validate_summary(summary, kind)
    return passed / total if total else 1.0
