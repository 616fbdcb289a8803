"""`memstream bench …` runs the benches of the source checkout (benchmarks/, not in the wheel):
without them every bench command says so in one line and exits 2, and its help still shows."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from streams.cli import bench, main

TINY = str(Path(__file__).resolve().parents[2] / "data" / "locomo_tiny.json")
COMMANDS = [["locomo", "--offline", TINY], ["query", "--memories", "10"], ["rebuild", "--memories", "10"],
            ["embedder", TINY], ["mem0", TINY], ["policy", TINY]]


@pytest.mark.parametrize("args", COMMANDS, ids=[a[0] for a in COMMANDS])
def test_without_the_bench_package_a_bench_says_where_it_runs(monkeypatch, args):
    monkeypatch.setattr(bench, "BENCH_PACKAGE", "benchmarks_not_installed")
    result = CliRunner().invoke(main.app, ["bench", *args])
    assert result.exit_code == 2
    assert result.stderr.strip() == bench.NOT_IN_THE_WHEEL
    assert "\n" not in result.stderr.strip() and result.stdout == ""


def test_without_the_bench_package_the_bench_help_still_shows(monkeypatch):
    monkeypatch.setattr(bench, "BENCH_PACKAGE", "benchmarks_not_installed")
    result = CliRunner().invoke(main.app, ["bench", "locomo", "--help"])
    assert result.exit_code == 0 and "--offline" in result.stdout


def test_the_checkout_has_the_bench_package():
    bench.require_benches()  # no exit: the checkout's benchmarks/ is importable
