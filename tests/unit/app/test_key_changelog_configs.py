"""The `user_keys` changelog is created with configs that bound how long a shredded key's old
(wrapped) record stays in the topic before compaction removes it."""
import tempfile
from pathlib import Path

from streams.app.factory import create_app
from streams.settings import Settings
from streams.privacy.user_keys import CHANGELOG_CONFIGS

HOUR_MS = 3_600_000


def test_the_key_changelog_requests_compaction_within_a_bounded_time():
    app = create_app(Settings(table_store="memory://", data_dir=Path(tempfile.mkdtemp())))
    topic = app.tables.user_keys.changelog_topic
    assert topic.compacting
    for name, value in CHANGELOG_CONFIGS.items():
        assert topic.config.get(name) == value, name
    assert CHANGELOG_CONFIGS["cleanup.policy"] == "compact"
    assert int(CHANGELOG_CONFIGS["max.compaction.lag.ms"]) <= HOUR_MS
    assert int(CHANGELOG_CONFIGS["segment.ms"]) <= HOUR_MS, "the active segment rolls, then compacts"
    assert float(CHANGELOG_CONFIGS["min.cleanable.dirty.ratio"]) <= 0.1
