"""Offset checkpoint files (Java OffsetCheckpointFile): ``recovery-point-offset-checkpoint`` and
``log-start-offset-checkpoint`` in every data directory.

Text format (as Kafka's): a version line (``0``), a count line, then one ``<topic> <partition> <offset>``
line per partition. Written atomically (:func:`mini_broker.utils.atomic_file.atomic_write`). A missing file reads as empty; a malformed one also reads as empty (and is logged), which
only makes recovery scan more.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

from mini_broker.utils.atomic_file import atomic_write

_log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT_FILE: Final = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE: Final = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"
_VERSION: Final = 0


class OffsetCheckpointFile:
    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        lines = [str(_VERSION), str(len(offsets))]
        lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
        atomic_write(self.path, ("\n".join(lines) + "\n").encode("utf-8"))

    def read(self) -> dict[tuple[str, int], int]:
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return {}
        try:
            if int(lines[0]) != _VERSION:
                raise ValueError(f"unknown version {lines[0]!r}")
            count = int(lines[1])
            entries = lines[2:]
            if count != len(entries):
                raise ValueError(f"expected {count} entries, found {len(entries)}")
            out: dict[tuple[str, int], int] = {}
            for line in entries:
                topic, partition, offset = line.split(" ")
                out[(topic, int(partition))] = int(offset)
            return out
        except (ValueError, IndexError) as e:
            _log.warning("ignoring malformed checkpoint file %s: %s", self.path, e)
            return {}

