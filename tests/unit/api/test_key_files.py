"""`memstream run`'s dev admin key: kept in a file of its own (0600, never through a symlink,
never over another file) and never printed in full."""
from __future__ import annotations

import os
import stat

import pytest

from streams.api import auth
from streams.settings import Settings
from streams.cli import keys


def test_the_dev_key_is_made_once_with_mode_0600_and_read_back(tmp_path):
    settings = Settings(data_dir=tmp_path)
    key = auth.dev_admin_key(settings)
    path = auth.dev_key_path(settings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert auth.dev_admin_key(settings) == key == auth.client_key(settings)


def test_the_key_file_writer_never_follows_a_symlink(tmp_path):
    target = tmp_path / "somewhere-readable"
    link = tmp_path / "admin-api-key"
    link.symlink_to(target)  # dangling: a writer that follows it would create the target
    with pytest.raises(auth.KeyFileError):
        auth.write_private(link, auth.new_key())
    assert not target.exists()


def test_the_key_file_writer_never_overwrites_a_file(tmp_path):
    path = tmp_path / "master-key"
    path.write_text("kept")
    with pytest.raises(auth.KeyFileError):
        auth.write_private(path, "other")
    assert path.read_text() == "kept"


def test_a_planted_symlink_is_not_taken_as_the_dev_key(tmp_path):
    planted = tmp_path / "known-key"
    planted.write_text(auth.new_key())
    auth.dev_key_path(Settings(data_dir=tmp_path)).symlink_to(planted)
    with pytest.raises(auth.KeyFileError, match="symlink"):
        auth.dev_admin_key(Settings(data_dir=tmp_path))


def test_an_empty_key_file_is_made_again(tmp_path):
    settings = Settings(data_dir=tmp_path)
    auth.dev_key_path(settings).write_text("")
    key = auth.dev_admin_key(settings)
    assert key.startswith("msk_") and auth.read_private(auth.dev_key_path(settings)) == key


def test_run_says_where_the_dev_key_is_and_never_prints_it(tmp_path, capsys, monkeypatch):
    for name in ("MEMSTREAM_API_KEYS", "API_KEYS_FILE"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(data_dir=tmp_path)
    (entry,) = keys.dev_admin_entries(settings)
    key = auth.read_private(auth.dev_key_path(settings))
    assert key is not None and entry.sha256 == auth.hash_key(key)
    captured = capsys.readouterr()
    shown = (captured.out + captured.err).replace("\n", "")  # the console wraps long lines
    assert key not in shown
    assert key[:8] in shown and str(auth.dev_key_path(settings)) in shown


def test_the_kept_master_key_is_written_by_the_same_writer(tmp_path):
    link = tmp_path / "master-key"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(auth.KeyFileError):
        keys.with_kept_master_key(Settings(data_dir=tmp_path), make=True)
    assert not (tmp_path / "elsewhere").exists()
    os.unlink(link)
