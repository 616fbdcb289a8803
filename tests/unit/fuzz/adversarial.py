"""Hostile text for the scanners of untrusted text: the pieces their patterns can loop over
(backticks after a keyword, keywords glued together, runs of spaces, "sk-", "//", names …),
mixed at random or repeated into long runs. Mixes are short enough for the quadratic originals
the linear patterns are checked against; runs are long enough to span several scan windows."""
from __future__ import annotations

from hypothesis import strategies as st

SECRET_PIECES = [
    "secret", "password", "pwd", "api_key", "Secret", "passwd", "db_pass", "key_pass",
    "contraseña", ":", "=", "==", "!=", "===", "=>", "'", '"', "`", ",", ";", " ", "  ", "\n",
    "\v", "\t", "a", "A1", "x9Y", "hunter2", "_", "-", ".", "(", ")", "[", "]", "@", "0", "é",
    "sk-", "eyJ", "//", "/:_authToken=", "npm_", "T3BlbkFJ", "abcdefghij", "aaaaaaaaaaaaaaaaaaaa",
    "12345678901234567890", "eyJhbGciOiJIUzI1NiJ9", "eyJzdWIiOiIxIn0", "https://",
    "registry.npmjs.org/",
]
"""What the secret scan's patterns are made of: keywords, quotes, operators, key prefixes."""

RULE_PIECES = [
    " ", "  ", "\n", " \n ", "\xa0", "\t", ",", ", ", ";", ".", "!", "?", "…", "-", " - ", "–", "'", '"',
    "(", ")", "[", "]", "a", "I", "my", "Max", "Luna", "who", "is", "3", "12", "and", "so", "you",
    "know", "just", "that", "are", "aware", "fyi", "look", "take a look", "see", "check it out",
    "please", "thanks", "ok", "okay", "hey", "also", "can", "you", "don't", "remember", "forget",
    "pin", "off the record", "first", "firstly", "then", "step", "1.", "2)", "to", "need", "really",
    "super", "totally", "love", "it", "[shares an image:", "a dog", "named",
]
"""What the sentence rules' patterns are made of: spaces, punctuation, their words."""

RUN_PIECES = [
    "`a", "secret ", "secret`", "api_key", "password:", "'", "`", " ", "\xa0", "\n", ", ", "ok ",
    "sk-", "/", "eyJ", "AC" + "a" * 32, "PRIVATE KEY ", "-----BEGIN ", "x`==pwd ", "a`;'",
    "1,", "Aa ", "first, ", "[shares an image: ", "?!", "…", "a dog named Max ",
]
"""Pieces whose long runs made a pattern rescan the run from each place in it."""


def mixes(pieces: list[str], max_pieces: int = 40) -> st.SearchStrategy[str]:
    """Short texts of `pieces` in any order."""
    return st.lists(st.sampled_from(pieces), max_size=max_pieces).map("".join)


@st.composite
def runs(draw: st.DrawFn, max_chars: int = 40_000) -> str:
    """A head, one piece repeated up to `max_chars`, a tail: a text that is one long run."""
    piece = draw(st.sampled_from(RUN_PIECES))
    size = draw(st.integers(min_value=1, max_value=max_chars))
    head = draw(mixes(SECRET_PIECES, 4))
    tail = draw(mixes(SECRET_PIECES, 4))
    return head + (piece * (size // len(piece) + 1))[:size] + tail
