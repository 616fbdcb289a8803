"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and the
anchor, when one is given, is a heading of that file or an explicit `<a id="…">` in it.

Links inside code (fenced blocks and inline spans) are text, not links, and are not checked;
absolute URLs are not fetched.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
EXPLICIT_ID = re.compile(r"""<a\s+(?:[^>]*\s)?(?:id|name)=["']([^"']+)["']""")


def prose(text: str) -> str:
    """The page without its code: fenced blocks and inline code spans."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: the rendered text, lower case, punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)                     # inline HTML
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)      # links keep their text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    found = set(EXPLICIT_ID.findall(text))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCE.sub("", text)):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def links(path: Path) -> list[str]:
    return LINK.findall(prose(path.read_text(encoding="utf-8")))


def broken(page: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with each link of `page` that leads nowhere."""
    def shown(path: Path) -> Path:
        return path.relative_to(root) if path.is_relative_to(root) else path

    wrong = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):         # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / unquote(file_part)).resolve() if file_part else page
        if not linked.exists():
            wrong.append(f"{target}: no file {shown(linked)}")
        elif anchor and linked.suffix == ".md" and unquote(anchor) not in anchors(linked):
            wrong.append(f"{target}: no anchor #{anchor} in {shown(linked)}")
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert not broken(page), broken(page)


def test_the_pages_link_to_one_another():
    assert len(PAGES) > 5
    assert sum(len(links(page)) for page in PAGES) > 50


def test_the_checker_sees_a_broken_file_and_a_broken_anchor(tmp_path):
    (tmp_path / "b.md").write_text("# A heading, with `code`\n\n<a id=\"fixed\"></a>\n", encoding="utf-8")
    page = tmp_path / "a.md"
    page.write_text("[ok](b.md#a-heading-with-code) [ok](b.md#fixed) [ok](#here)\n\n## Here\n\n"
                    "`[code](nowhere.md)` [bad](c.md) [bad](b.md#nowhere)\n", encoding="utf-8")
    assert broken(page, root=tmp_path.resolve()) == [
        "c.md: no file c.md", "b.md#nowhere: no anchor #nowhere in b.md"]
