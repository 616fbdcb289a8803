from streams.read.delta import render_delta


def change(rev: int, kind: str = "created", summary: str = "Preferred name is Ana") -> dict:
    return {"rev": rev, "kind": kind, "memory_id": str(rev), "summary": summary,
            "category": "Personal", "importance": 2}


def test_header_has_at_most_three_bullets_newest_first():
    header = render_delta(4, [change(9, "updated", "Ship v1 by Sep"), change(8), change(7), change(6)])
    lines = header.splitlines()
    assert lines[0] == "Memory updates since rev 4:"
    assert lines[1] == "- ↑updated: [Personal] Ship v1 by Sep (imp=2)"
    assert len(lines) == 4


def test_no_changes_no_header():
    assert render_delta(3, []) == ""
