"""The layout rules of the code base (docs/architecture.md#layout), checked so they stay true.

- `streams/` keeps at most 12 modules at its top level; the rest live in sub-packages.
- Dependencies point one way: `agents/` (the Faust stages) use `streams/`; nothing in `streams/`
  imports `agents/` but the worker entry point, and no service code imports the tests' fakes.
- Importing the service builds nothing: an app exists only once `create_app` is called.
- The benches (`benchmarks/`) are not in the wheel and the service does not import them: only
  the `memstream bench` commands do, when one runs.
- The worker's app (`streams/app/`) never imports the web layer (`streams/api/`): the web layer
  builds its own state (`streams/api/state.py`) and the worker entry point (`streams/worker/`)
  puts the two together. The stages (`streams/pipeline/`) import nothing of the app that builds
  them (`streams/app/topology.py`).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

ROOT = Path(__file__).parents[2]
SERVICE_PACKAGES = ("streams", "agents", "sinks", "topics")
ENTRY_POINTS = {"streams/worker/__init__.py"}
BENCH_COMMANDS = "streams/cli/bench.py"
"""The one service module that imports the benches: inside each `memstream bench` command."""


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at any depth of the file (absolute imports only)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_streams_keeps_few_top_level_modules():
    top = sorted(p.name for p in (ROOT / "streams").glob("*.py"))
    assert len(top) <= 12, top


def test_only_the_worker_entry_point_imports_the_stages():
    offenders = [
        str(path.relative_to(ROOT)) for path in python_files("streams")
        if str(path.relative_to(ROOT)) not in ENTRY_POINTS
        and any(m == "agents" or m.startswith("agents.") for m in imported_modules(path))
    ]
    assert offenders == []


def test_the_app_never_imports_the_web_layer():
    offenders = [
        str(path.relative_to(ROOT)) for path in python_files("streams/app")
        if any(m == "streams.api" or m.startswith("streams.api.") for m in imported_modules(path))
    ]
    assert offenders == []


def test_the_stages_never_import_the_app_that_builds_them():
    offenders = [
        f"{path.relative_to(ROOT)}: {module}" for path in python_files("streams/pipeline")
        for module in imported_modules(path)
        if module == "streams.app" or module.startswith("streams.app.")
    ]
    assert offenders == []


def test_service_code_never_imports_the_tests():
    offenders = [
        str(path.relative_to(ROOT)) for package in SERVICE_PACKAGES for path in python_files(package)
        if any(m == "tests" or m.startswith("tests.") for m in imported_modules(path))
    ]
    assert offenders == []


def test_importing_every_service_module_builds_no_app():
    """No module creates a Faust app (or reads the settings into one) as an import side effect."""
    script = """
import gc, importlib, pkgutil
import faust
for package in ("streams", "agents", "sinks", "topics"):
    module = importlib.import_module(package)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
apps = [o for o in gc.get_objects() if isinstance(o, faust.App)]
print(len(apps))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip().splitlines()[-1] == "0", out.stderr[-2000:]


def wheel_packages() -> list[str]:
    """The packages the wheel ships: setuptools' find (namespaces on, as for a pyproject config)
    with pyproject's [tool.setuptools.packages.find]."""
    find = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return find_namespace_packages(where=str(ROOT), include=find["packages"]["find"]["include"])


def test_the_wheel_ships_the_service_and_no_bench():
    shipped = wheel_packages()
    assert {"streams", "streams.cli", "streams.tools", "agents", "topics", "sinks"} <= set(shipped)
    assert [p for p in shipped if p.split(".")[0] in ("benchmarks", "tests")
            or p.startswith("streams.eval")] == []
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["setuptools"]["package-data"]
    assert set(package_data) <= set(shipped)


def test_only_the_bench_commands_import_the_benches():
    offenders = [
        str(path.relative_to(ROOT)) for package in SERVICE_PACKAGES for path in python_files(package)
        if str(path.relative_to(ROOT)) != BENCH_COMMANDS
        and any(m.split(".")[0] == "benchmarks" for m in imported_modules(path))
    ]
    assert offenders == []


def test_the_help_and_the_worker_never_import_the_benches():
    script = """
import sys
from typer.testing import CliRunner
import streams.worker
from streams.cli.main import app
for args in (["--help"], ["bench", "--help"], ["bench", "locomo", "--help"], ["keys", "--help"]):
    assert CliRunner().invoke(app, args).exit_code == 0, args
print(sorted(m for m in sys.modules if m.split(".")[0] == "benchmarks"))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         check=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert out.stdout.strip() == "[]", out.stderr[-2000:]
