"""A quiet start (issue 25 item 4): the project logs at LOG_LEVEL, libraries at WARNING unless
LOG_LEVEL is debug, and the model's quantiser keeps its notes to itself."""
from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from mode.utils.logging import setup_logging

from streams.observability.logs import OWN_LOGGERS, worker_logging
from streams.providers.embedders.onnx_export import _quiet


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (root.level, list(root.handlers),
             {name: logging.getLogger(name).level for name in (*OWN_LOGGERS, "faust", "aiokafka")})
    yield
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    for name, level in saved[2].items():
        logging.getLogger(name).setLevel(level)


def emit_samples() -> None:
    logging.getLogger("faust.worker").info("[^Worker]: Starting...")
    logging.getLogger("mode.timers").info("Timer commit woke up too late")
    logging.getLogger("streams.worker").info("ready")
    logging.getLogger("aiokafka.consumer").warning("coordinator dead")
    logging.getLogger("streams.api.auth").debug("a key checked")


def test_libraries_log_at_warning_and_the_project_at_its_level(restored_logging):
    keep = Keep()
    setup_logging(loglevel="INFO", logging_config=worker_logging("info"), loghandlers=[keep])
    emit_samples()
    assert keep.messages == ["ready", "coordinator dead"]


def test_debug_asks_for_everything(restored_logging):
    keep = Keep()
    setup_logging(loglevel="DEBUG", logging_config=worker_logging("debug"), loghandlers=[keep])
    emit_samples()
    assert len(keep.messages) == 5


def test_the_quantiser_s_notes_are_dropped_while_it_runs_and_errors_kept(restored_logging):
    keep = Keep()
    root = logging.getLogger()
    root.addHandler(keep)
    root.setLevel(logging.INFO)
    with _quiet(root):
        logging.info('Quantization parameters for tensor:"x" not specified')
        logging.warning("Please consider to run pre-processing before quantization.")
        logging.error("the quantiser failed")
    logging.warning("after")
    assert keep.messages == ["the quantiser failed", "after"]
