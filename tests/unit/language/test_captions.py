"""Image captions in chat text (streams/language/captions.py)."""
from __future__ import annotations

import pytest

from streams.language.captions import caption_words, shared_photo, split_image_caption, with_image_caption


def test_a_caption_is_split_off_the_text() -> None:
    assert split_image_caption("Look! [shares an image: a photo of a cat]") == ("Look!", "a photo of a cat")
    assert split_image_caption("No image here.") == ("No image here.", None)
    assert split_image_caption("[shares an image:  ]") == ("", None)
    assert split_image_caption("A [shares an image: cat] and more") == ("A [shares an image: cat] and more", None)


@pytest.mark.parametrize(("caption", "shared"), [
    ("a photography of a car on a flatbed", "a photo of a car on a flatbed"),
    ("a picture of a sunset", "a photo of a sunset"),
    ("a screenshot of a chat", "a screenshot of a chat"),
    ("a painting of a lake", "a photo of a painting of a lake"),
    (" a dog on a sofa ", "a photo of a dog on a sofa"),
])
def test_what_a_shared_photo_shows(caption: str, shared: str) -> None:
    assert shared_photo(caption) == shared
    assert caption_words(caption) == caption.strip().replace("photography", "photo").replace(
        "picture", "photo")


def test_a_caption_written_in_the_form_is_read_back() -> None:
    text = with_image_caption("A beagle, look at him.", " a photo of a beagle puppy ")
    assert text == "A beagle, look at him. [shares an image: a photo of a beagle puppy]"
    assert split_image_caption(text) == ("A beagle, look at him.", "a photo of a beagle puppy")
