"""Chat text into sentences: syntok's segmenter, with the two breaks chat makes around it.

Where a period ends a sentence is the hard part: "St. Mary's", "Dr. Adams", "U.S. Census
Bureau", "Aug. 14", "J.K. Rowling", "$3.50", "5 p.m.", "www.example.com" and
"ana@example.com" all hold one that does not, and "Ana writes. Mr. Li reads." one that does
before a title. syntok (`syntok.segmenter`, rules over its own tokenizer, pure Python on the
`regex` package) decides every period. Chosen on the labelled sentences of
`tests/data/details/sentences.jsonl` joined into turns of 1–4 sentences, and on ten pairs whose
second sentence opens on a title ("… office. Dr. Adams answered."), timed on the LoCoMo
development turns (2026-12-02, the project machine under load):

| splitter | joined turns split right | title-first pairs | µs a LoCoMo turn |
|---|---|---|---|
| syntok 1.4.4 (chosen) | 430 / 433 | 9 / 10 | 395 |
| pysbd 0.3.4 | 432 / 433 | 10 / 10 | 1,486 |
| Bling Fire 0.1.8 | 430 / 433 | 1 / 10 (breaks after a title that opens a sentence) | 45 |
| spaCy 3.8 sentencizer (blank English) | 427 / 433 | — | 327 |
| sentencex 1.0 | 428 / 433 (breaks after "Ms.", "Sgt.") | — | 6 |
| our old regular expressions | 375 / 433 | — | 24 |

pysbd is as right, at almost four times the cost (more than the rest of the extractor's rules
together); Bling Fire is fastest but splits "Dr. Adams answered." wherever it follows a
sentence. syntok's misses: "Fig." read as "figure", "Sgt." as an end.

Around it, chat's own breaks, which never sit inside an abbreviation: a line break (before), and
a run of "!" or "?" followed by a space (after: "Thanks! it's a team shooter game." is two
sentences in chat, one to a segmenter for prose). Each sentence is cut from the text by syntok's
token offsets, so it is the turn's own characters; a line whose sentences would not hold all of
its characters (never seen; a guard, not a rule) is kept whole, so no text is ever lost.
"""
from __future__ import annotations

import re
from functools import lru_cache

from syntok import segmenter

_LINE_BREAK = re.compile(r"(?<![^\S\n])[^\S\n]*+\n\s*")
"""A line break with the spaces around it, tried only where a run of spaces starts (linear: see
`streams/language/sentences.py`)."""
_EXCLAIMED = re.compile(r"(?:(?<=[!?])|(?<=[!?][\"')\]”’]))\s+(?:-\s+)?")
"""After "!" or "?" (and a closing quote or bracket): a break, and a dash that opens the next
sentence ("… loved it! - see you") goes with the break."""


def _segmented(line: str) -> list[str]:
    """`line`'s sentences by syntok, each cut from `line` by its tokens' offsets; the line
    whole when they would not hold all of its characters. syntok ends a sentence at a semicolon
    before a capital ("… in July 2023; On 14 July …"); a semicolon joins clauses of one
    sentence, so such a part is joined to the next."""
    spans: list[tuple[int, int]] = []
    for paragraph in segmenter.analyze(line):
        for sentence in paragraph:
            if not sentence:
                continue
            start, end = sentence[0].offset, sentence[-1].offset + len(sentence[-1].value)
            if spans and line[spans[-1][0]:spans[-1][1]].rstrip().endswith(";"):
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
    parts = [line[start:end].strip() for start, end in spans]
    if "".join("".join(parts).split()) != "".join(line.split()):
        return [line.strip()]
    return [p for p in parts if p]


def _opening_dash(sentence: str) -> str:
    """"- see you" → "see you": a dash and a space that open a sentence only join it on."""
    return sentence[2:].lstrip() if sentence[:2] in ("- ", "– ") else sentence


def split_sentences(text: str) -> list[str]:
    """The sentences of chat text, in order, stripped; none empty."""
    return list(_split(text))


@lru_cache(maxsize=1024)
def _split(text: str) -> tuple[str, ...]:
    """`split_sentences`, remembered: a turn's text is split by the trigger, the statements,
    the extraction and the episode capture in turn, and syntok costs ~0.4 ms a turn."""
    out: list[str] = []
    for line in _LINE_BREAK.split(text.strip()):
        if line:
            for sentence in _segmented(line):  # one call a line: each call costs more than a break
                out.extend(p for p in map(_opening_dash, _EXCLAIMED.split(sentence)) if p)
    return tuple(out)
