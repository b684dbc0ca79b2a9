"""The exclusive lock a broker holds on each of its data directories (Kafka: ``FileLock`` on ``<dir>/.lock``,
taken by ``LogManager.lockLogDirs`` before anything reads or writes the directory).

The lock is an ``flock(LOCK_EX | LOCK_NB)`` on ``<dir>/.lock``, held from before the broker's first write
until its shutdown has written its last byte. flock locks belong to the open file, so a second broker fails
whether it runs in another process or in this one, and the kernel drops the lock when the process dies:
a crashed broker never leaves a stale lock behind. The file itself stays (as in Kafka).
"""

from __future__ import annotations

import fcntl
import os
from typing import Final

LOCK_FILE: Final = ".lock"


class DataDirInUseError(OSError):
    """Another broker (in this process or another one) holds the lock on the data directory."""


class DataDirLock:
    """The lock on one data directory: :meth:`acquire` once, :meth:`release` once at shutdown."""

    def __init__(self, data_dir: str) -> None:
        self.data_dir = os.path.abspath(data_dir)
        self.path = os.path.join(self.data_dir, LOCK_FILE)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Create the directory if needed and take the lock, or raise :class:`DataDirInUseError` (nothing
        written then, beyond the empty ``.lock`` file of a directory nobody owned yet)."""
        if self._fd is not None:
            return
        os.makedirs(self.data_dir, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirInUseError(
                f"data directory {self.data_dir} is in use by another broker (its lock {self.path} is held); "
                "stop that broker or give this one another --data-dir"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (idempotent). Call it after the broker's last write to the directory."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
