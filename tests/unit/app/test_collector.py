"""A worker collects cycles less often, with what it loaded frozen out of the scans (issue 22)."""
from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

from streams.app.collector import WORKER_THRESHOLDS

COLLECTOR_AS_THE_WORKER_RUNS = """
import gc, faust
import streams.app.topic_admin as topic_admin
import streams.worker as worker
from streams.settings import Settings

class App:
    class faust:
        @staticmethod
        def task(task): pass

class Worker:
    def __init__(self, *args, **kwargs): pass
    def execute_from_commandline(self):
        print(gc.get_threshold(), gc.get_freeze_count() > 0)

faust.Worker = Worker
topic_admin.ensure_topics = lambda *args, **kwargs: []
worker.build_worker = lambda settings, extra_keys=(): App
worker._announce_ready = lambda app: None
print(gc.get_threshold(), gc.get_freeze_count() > 0)
worker.run_worker(Settings())
"""


def test_the_worker_runs_with_its_collector_thresholds_and_its_startup_objects_frozen(
        tmp_path: Path) -> None:
    """In a fresh process, `run_worker` up to the point where Faust's worker takes over (the
    broker, the app and Faust's worker are stand-ins): Python's defaults before, the worker's
    thresholds and a frozen generation when it starts serving."""
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               MEMSTREAM_MASTER_KEY=base64.urlsafe_b64encode(bytes(range(32))).decode())
    env.pop("MASTER_KEY_FILE", None)
    result = subprocess.run([sys.executable, "-c", COLLECTOR_AS_THE_WORKER_RUNS], cwd=tmp_path,
                            env=env, capture_output=True, text=True, check=True)
    before, serving = result.stdout.strip().splitlines()
    pythons_own = subprocess.run([sys.executable, "-c", "import gc; print(gc.get_threshold())"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    assert before == f"{pythons_own} False"  # nothing frozen yet
    assert serving == f"{WORKER_THRESHOLDS} True"
