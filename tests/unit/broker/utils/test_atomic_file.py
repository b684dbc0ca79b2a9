"""The one atomic file write of the broker: temp file fsynced, renamed over the target, directory fsynced."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mini_broker.utils import atomic_file
from mini_broker.utils.atomic_file import atomic_write


def _record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What each os.fsync call synced, in order: "file:<name>" or "dir:<path>"."""
    calls: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            calls.append(f"dir:{os.readlink(f'/proc/self/fd/{fd}')}")
        else:
            calls.append(f"file:{os.path.basename(os.readlink(f'/proc/self/fd/{fd}'))}")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_replaces_the_content_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint"
    target.write_bytes(b"old")
    atomic_write(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to name the fsynced descriptors")
def test_fsyncs_the_temp_file_then_the_directory_after_the_rename(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _record_fsyncs(monkeypatch)
    renamed: list[str] = []
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        renamed.append(f"after {len(calls)} fsyncs")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    atomic_write(str(tmp_path / "registry.json"), b"{}")
    assert calls == ["file:registry.json.tmp", f"dir:{tmp_path}"]
    assert renamed == ["after 1 fsyncs"]  # the file is durable before the rename, the rename before return


def test_a_failed_write_keeps_the_old_content_and_removes_the_temp_file(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "meta.properties"
    target.write_bytes(b"old")

    def fail(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space left"):
        atomic_write(str(target), b"new")
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["meta.properties"]


def test_a_directory_that_cannot_be_fsynced_does_not_fail_the_write(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(22, "Invalid argument")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    atomic_write(str(tmp_path / "f"), b"x")
    assert (tmp_path / "f").read_bytes() == b"x"


def test_an_io_error_fsyncing_the_directory_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # EIO: the rename may not survive a crash, so the write is not reported as durable (Kafka's flushDir raises)
    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output error"):
        atomic_write(str(tmp_path / "f"), b"x")


@pytest.mark.parametrize("module", [
    "mini_broker.log.checkpoint", "mini_broker.server.metadata_cache", "mini_broker.producer_state.producer_state_manager",
    "mini_broker.producer_state.producer_id_manager", "mini_broker.log.transaction_index", "mini_broker.cluster.controller",
])
def test_every_writer_of_a_small_file_uses_the_one_helper(module: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    source = Path(mod.__file__ or "").read_text()
    assert mod.atomic_write is atomic_file.atomic_write
    assert "os.replace(" not in source  # no hand-rolled temp-file-and-rename left
