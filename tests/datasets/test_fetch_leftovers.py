"""Downloads into the data home: a read-only home, and what killed downloads leave."""

import errno
import os
import subprocess
import sys
import tempfile
import urllib.request

import pytest
from click.testing import CliRunner

from fairpca.cli import cli
from fairpca.datasets import _fetch

GERMAN = "german_credit/german.data"


def _offline(url, timeout):
    raise AssertionError("no download was expected")


def test_a_read_only_data_home_is_a_clear_error(tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    monkeypatch.setattr(urllib.request, "urlopen", _offline)
    with pytest.raises(OSError, match="cannot download data file german.data into the data home"):
        _fetch.fetch_file(GERMAN, data_home=tmp_path, download=True)
    args = ["compare", "--dataset", "german", "--data-home", str(tmp_path), "--download"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert "Read-only file system" in result.output and "writable folder" in result.output
    assert "Traceback" not in result.output


def test_part_files_of_killed_downloads_are_removed(tmp_path, monkeypatch):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "german_credit"
    folder.mkdir()
    stale = folder / f"german.data.{dead.pid}-abcd.part"
    stale.write_bytes(b"half")
    live = folder / f"german.data.{os.getpid()}-efgh.part"  # a download going on
    live.write_bytes(b"half")
    other = folder / "other.data.1-x.part"
    other.write_bytes(b"not ours")

    def offline(url, timeout):
        raise OSError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(OSError, match="could not download"):
        _fetch.fetch_file(GERMAN, data_home=tmp_path, download=True)
    assert sorted(p.name for p in folder.iterdir()) == sorted([live.name, other.name])
