"""No import cycle between modules, nor between packages (issue 21: "no import knots").

The graph is read from the source by `tests/import_graph.py`: every import that runs, at the top
of a file or inside a function, so a local import cannot hide a loop. A package is
`streams.<sub>` for the modules under `streams/<sub>/`, `streams` for the root modules
(`streams/__init__.py`, `streams/errors.py`, `streams/tables.py`), and `agents`, `topics`,
`sinks` and `benchmarks` as wholes. Imports under `if TYPE_CHECKING:` never run, but a reader
follows them all the same: the graph with them has no cycle either.
"""
from __future__ import annotations

import pytest

from tests.import_graph import Cycle, cycles, module_graph, package_graph


def _report(kind: str, found: list[Cycle]) -> str:
    return f"import cycles between {kind} (fix them; see tests/import_graph.py):\n" + "\n".join(
        f"  {c}" for c in found)


@pytest.mark.parametrize("type_checking", [False, True], ids=["run-time", "with-type-checking"])
def test_no_module_imports_itself_through_others(type_checking: bool):
    found = cycles(module_graph(type_checking=type_checking))
    assert not found, _report("modules", found)


@pytest.mark.parametrize("type_checking", [False, True], ids=["run-time", "with-type-checking"])
def test_no_package_imports_itself_through_others(type_checking: bool):
    found = cycles(package_graph(module_graph(type_checking=type_checking)))
    assert not found, _report("packages", found)


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
