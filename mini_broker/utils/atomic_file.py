"""Crash-safe replacement of a small file (checkpoints, the topic registry, meta.properties, producer state
snapshots, the producer id block, the controller's image).

:func:`atomic_write` writes ``<path>.tmp``, fsyncs it, renames it over ``path`` and fsyncs the directory, so
that after a crash the file holds either the old or the new content, never a torn mix, and the rename itself
survives a power loss. A failed write removes the temp file and leaves the old content in place.
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import Final

TMP_SUFFIX: Final = ".tmp"


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (see the module docstring). Raises ``OSError``
    when the file cannot be written or renamed (the old content is kept)."""
    tmp = path + TMP_SUFFIX
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(os.path.dirname(path) or ".")


#: What fsync of a directory answers on a file system that does not support it (then the rename is as
#: durable as that file system makes it); any other error (EIO, ...) is raised, as Kafka's flushDir does.
_FSYNC_DIR_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF})


def fsync_dir(path: str) -> None:
    """Make a rename or a creation in directory ``path`` durable. Windows, which cannot open a directory, and a
    file system that cannot fsync one are left as they are; a failed fsync of the directory raises."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in _FSYNC_DIR_UNSUPPORTED:
            raise
    finally:
        os.close(fd)
