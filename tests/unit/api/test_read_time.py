"""The time a query's read is recorded at (`streams.api.query.read_time_of`)."""
from datetime import datetime, timedelta, timezone

from streams.api.query import read_time_of

NOW = datetime(2024, 5, 15, 12, tzinfo=timezone.utc)


def test_a_read_is_recorded_at_the_query_time_but_never_after_the_users_clock():
    assert read_time_of(NOW, NOW + timedelta(days=1)) == NOW
    assert read_time_of(NOW + timedelta(days=400), NOW) == NOW
    assert read_time_of(None, NOW) == NOW


def test_a_read_with_no_clock_and_no_reference_has_no_time_instead_of_failing():
    """The clock is read before the query is embedded; a user's first memories applied in
    between gave hits with no clock, and `min` of nothing answered 500."""
    assert read_time_of(None, None) is None
