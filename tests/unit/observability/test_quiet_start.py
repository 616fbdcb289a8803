"""A quiet start (issue 25 item 4): the project logs at LOG_LEVEL, libraries at WARNING unless
LOG_LEVEL is debug, and the model's quantiser keeps its notes to itself."""
from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from mode.utils.logging import setup_logging

from streams.observability.logs import OWN_LOGGERS, SERVICE_MODULES, worker_logging
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
             {name: logging.getLogger(name).level
              for name in (*OWN_LOGGERS, *SERVICE_MODULES, "faust", "aiokafka")})
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


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_faust_service_of_the_project_logs_at_the_libraries_level(restored_logging):
    """mode names a service's logger after its class's module: a project module subclassing a
    Faust service (producer, consumer, table, store, stream) must be in SERVICE_MODULES, or its
    start-up notes ("[^--DrainingProducer]: Starting...", "opening partition 2 for gen id 0")
    come out at LOG_LEVEL, ~90 lines before `memstream run` says ready (issue 50 item 6)."""
    from mode import Service

    import streams.worker  # noqa: F401  (every stage, table, store and Faust driver of the worker)
    from streams.app.factory import create_app
    from streams.settings import Settings

    create_app(Settings(table_store="memory://"))
    modules = {cls.__module__ for cls in _subclasses(Service)
               if cls.__module__.split(".")[0] in OWN_LOGGERS}
    assert modules and modules <= set(SERVICE_MODULES), sorted(modules - set(SERVICE_MODULES))

    keep = Keep()
    setup_logging(loglevel="INFO", logging_config=worker_logging("info", quiet_services=True),
                  loghandlers=[keep])
    for module in sorted(modules):
        logging.getLogger(module).info("[^--DrainingProducer]: Starting...")
        logging.getLogger(module).warning("a warning passes")
    assert keep.messages == ["a warning passes"] * len(modules)
