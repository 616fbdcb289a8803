"""The README is a door: short, the two commands CI relies on, one turn's walk in brief, and a
list of every doc. The rest lives in docs/ (tests/unit/docs/test_links.py checks the links)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The README's `## title` section, without its heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.MULTILINE | re.DOTALL)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= 200


def test_two_commands_are_the_ones_ci_and_a_newcomer_run():
    block = re.search(r"```bash\n(.*?)```", section("Two commands"), re.DOTALL).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["./dev run", "./dev test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^exec \./dev test\b", ci, re.MULTILINE), "CI runs the README's test command"


def test_following_one_turn_is_brief_and_points_to_the_architecture():
    walk = section("Following one turn").strip()
    assert len(walk.splitlines()) <= 12
    assert "docs/architecture.md#following-one-turn" in walk


def test_where_to_read_on_lists_every_doc():
    listed = set(re.findall(r"\]\((docs/[^)#]+\.md)\)", section("Where to read on")))
    docs = {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")}
    assert listed == docs, f"not listed: {sorted(docs - listed)}, not docs: {sorted(listed - docs)}"
