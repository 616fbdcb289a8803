"""No import cycle between modules, nor between packages (issue 21: "no import knots").

The graph is read from the source by `tests/import_graph.py`: every import that runs, at the top
of a file or inside a function, so a local import cannot hide a loop; imports under
`if TYPE_CHECKING:` never run and do not count. A package is `streams.<sub>` for the modules under
`streams/<sub>/`, `streams` for the root modules (`streams/__init__.py`,
`streams/errors.py`, `streams/tables.py`), and `agents`,
`topics`, `sinks` and `benchmarks` as wholes.
"""
from __future__ import annotations

from dataclasses import dataclass

from tests.import_graph import Cycle, cycles, module_graph, package_graph, package_of


@dataclass(frozen=True)
class Pending:
    """A knot another part of issue 21 is untying on its own branch."""

    owner: str
    within: frozenset[str]
    """Imports from one of these packages into another are not counted, and a module cycle
    inside them is theirs."""


# Cycles other parts of issue 21 are fixing on their branches. This must end EMPTY: whoever merges
# the part that unties a knot deletes its line here, and the test then holds that knot shut.
PENDING_ELSEWHERE: frozenset[Pending] = frozenset()


def _graph() -> dict[str, frozenset[str]]:
    """The module graph without the imports `PENDING_ELSEWHERE` leaves to others."""
    graph = module_graph()
    groups = [p.within for p in PENDING_ELSEWHERE]

    def theirs(a: str, b: str) -> bool:
        pa, pb = package_of(a), package_of(b)
        return pa != pb and any(pa in g and pb in g for g in groups)

    return {m: frozenset(t for t in targets if not theirs(m, t)) for m, targets in graph.items()}


def _pending(members: tuple[str, ...]) -> bool:
    """Whether a module cycle lies inside the packages of one allowance."""
    return any({package_of(m) for m in members} <= p.within for p in PENDING_ELSEWHERE)


def _report(kind: str, found: list[Cycle]) -> str:
    return f"import cycles between {kind} (fix them; see tests/import_graph.py):\n" + "\n".join(
        f"  {c}" for c in found)


def test_no_module_imports_itself_through_others():
    found = [c for c in cycles(_graph()) if not _pending(c.members)]
    assert not found, _report("modules", found)


def test_no_package_imports_itself_through_others():
    found = cycles(package_graph(_graph()))
    assert not found, _report("packages", found)


def test_every_allowance_is_still_a_knot():
    """Whoever unties a knot deletes its allowance: the list only shrinks."""
    graph = module_graph()
    packages = package_graph(graph)
    for pending in PENDING_ELSEWHERE:
        inside = {p: t & pending.within for p, t in packages.items() if p in pending.within}
        assert cycles(inside), f"no cycle left among {sorted(pending.within)}: delete {pending}"


def test_the_graph_sees_local_imports_and_skips_type_checking(tmp_path):
    pkg = tmp_path / "streams" / "demo"
    pkg.mkdir(parents=True)
    for top in ("streams", "agents", "topics", "sinks"):
        (tmp_path / top).mkdir(exist_ok=True)
        (tmp_path / top / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from streams.demo import c\nfrom .a import f\n")
    (pkg / "c.py").write_text("from streams.demo.a import f\n")
    graph = module_graph(tmp_path)
    assert graph["streams.demo.a"] == {"streams.demo.b"}
    assert graph["streams.demo.b"] == {"streams.demo.a"}
    assert [c.members for c in cycles(graph)] == [("streams.demo.a", "streams.demo.b")]
    assert cycles(graph)[0].paths == (("streams.demo.a", "streams.demo.b", "streams.demo.a"),)
