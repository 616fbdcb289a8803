"""The end-to-end tests run against the same kind of stack as the integration tests: the
embedded broker and a worker process over TCP, with the test keys configured."""
from tests.integration.conftest import broker, worker  # noqa: F401 - fixtures
