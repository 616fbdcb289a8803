"""`?wait` of a registry write has a maximum (COMMAND_WAIT_MAX_SECONDS): a larger value, or one
that is not a number of seconds, is a 400 that says what is allowed, never a long wait."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from aiohttp.test_utils import make_mocked_request

from streams.api.registry import BadRequest, RegistryView
from streams.settings import Settings

VIEW = SimpleNamespace(memstream=SimpleNamespace(settings=Settings(command_wait_max_seconds=10)))


def wait(value: str) -> float:
    return RegistryView.wait_seconds(VIEW, make_mocked_request("DELETE", f"/x?wait={value}"))  # type: ignore[arg-type]


@pytest.mark.parametrize("value, seconds", [("1", 10.0), ("true", 10.0), ("2.5", 2.5), ("10", 10.0),
                                            ("0", 0.0), ("false", 0.0)])
def test_a_wait_within_the_maximum_is_taken(value, seconds):
    assert wait(value) == seconds


@pytest.mark.parametrize("value", ["10.5", "3600", "inf", "nan", "-1"])
def test_a_wait_past_the_maximum_is_refused_with_the_limit(value):
    with pytest.raises(BadRequest, match=r"wait must be between 0 and 10\.0 seconds"):
        wait(value)


def test_a_wait_that_is_no_number_is_refused():
    with pytest.raises(BadRequest, match="wait must be 1, true or a number of seconds"):
        wait("forever")
