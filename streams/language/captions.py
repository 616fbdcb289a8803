"""Image captions in chat text: a shared photo described in words after what the user wrote.

The chat backend receives no image, only its caption, appended to the turn's text in one form:
`<text> [shares an image: <caption>]`. The form is LoCoMo's: its dialogues carry the photo a
speaker shares as a BLIP caption (`blip_caption`), and `streams/tools/locomo.py` (`_make_turn`)
writes it into the turn in this form; a chat client that shares images can send the same. The
rules read the caption apart from the text (`split_image_caption`): the text's sentences are
rules-extracted as usual ("Here's Toby at the park" reads as "I shared a photo of Toby …"), and
the caption may become a low-importance "Ana shared a photo of …" fact (`shared_photo`).
"""
from __future__ import annotations

import re

CAPTION_OPENING = "[shares an image:"
"""How a caption starts in a turn's text (LoCoMo's form)."""

_CAPTION = re.compile(r"(?<!\s)\s*+\[shares an image:\s*+(?P<caption>[^\]]*+)\]\s*$")
_PHOTO_WORD = re.compile(r"^an?\s+(?:photograph|photography|picture|pic)\b", re.I)
_PHOTO = re.compile(r"an?\s+(?:photo|image|screenshot)\b", re.I)


def with_image_caption(text: str, caption: str) -> str:
    """`text` with `caption` appended in the caption form (`CAPTION_OPENING`)."""
    return f"{text} {CAPTION_OPENING} {caption.strip()}]"


def split_image_caption(text: str) -> tuple[str, str | None]:
    """`text` without a `[shares an image: …]` suffix, and the caption (None when there is none).

    The caption holds no "]" and ends the text, so it starts after the last "]" but one: the
    search starts there (a text full of "[shares an image:" and no closing "]" would otherwise
    be read to its end from each of them).
    """
    last = text.rfind("]")
    if last < 0 or text[last + 1:].strip():
        return text, None
    m = _CAPTION.search(text, text.rfind("]", 0, last) + 1)
    if not m:
        return text, None
    return text[: m.start()].rstrip(), m.group("caption").strip() or None


def caption_words(caption: str) -> str:
    """The caption trimmed, a leading "a photograph" / "a picture" / "a pic" said "a photo"."""
    return _PHOTO_WORD.sub("a photo", caption.strip())


def shared_photo(caption: str) -> str:
    """What a caption shows, as the object of "shared": "a photography of a car" → "a photo of
    a car", "a dog on a sofa" → "a photo of a dog on a sofa"."""
    caption = caption_words(caption)
    return caption if _PHOTO.match(caption) else f"a photo of {caption}"
