"""Allocation of unique producer ids that survive restarts (Kafka ``ProducerIdManager``, ZK/KRaft block style).

Ids are handed out from a block of :data:`PRODUCER_ID_BLOCK_SIZE`. Before the first id of a block is
returned, the block's end is written durably (temp file, fsync, rename) to ``producer_id_block`` in the data
dir. After a restart allocation resumes at the persisted end, so an id is never handed out twice even if the
broker crashed mid-block (the unused rest of that block is skipped).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from mini_broker.utils.atomic_file import atomic_write
from pykafka_client.errors import CorruptRecordError

PRODUCER_ID_BLOCK_SIZE = 1000
FILE_NAME = "producer_id_block"
MAX_PRODUCER_ID = 2**63 - 1


class ProducerIdManager:
    def __init__(self, data_dir: str, block_size: int = PRODUCER_ID_BLOCK_SIZE, first_id: int = 0) -> None:
        """``first_id``: no id below it is handed out (e.g. the end of blocks an older allocator persisted)."""
        if block_size < 1:
            raise ValueError("block_size must be positive")
        self.data_dir = data_dir
        self.block_size = block_size
        self._path = os.path.join(data_dir, FILE_NAME)
        self._lock = threading.Lock()
        self._block_end = max(self._read(), first_id)
        self._next = self._block_end

    def _read(self) -> int:
        try:
            with open(self._path, encoding="ascii") as fh:
                text = fh.read().strip()
        except FileNotFoundError:
            return 0
        if not text.isdigit():
            raise CorruptRecordError(f"{self._path} does not hold a producer id block end: {text[:40]!r}")
        return int(text)

    def _write(self, block_end: int) -> None:
        os.makedirs(self.data_dir, exist_ok=True)
        atomic_write(self._path, f"{block_end}\n".encode("ascii"))

    def generate_producer_id(self) -> int:
        with self._lock:
            if self._next >= self._block_end:
                end = self._next + self.block_size
                if end > MAX_PRODUCER_ID:
                    raise OverflowError("producer ids exhausted")
                self._write(end)
                self._block_end = end
            pid = self._next
            self._next += 1
            return pid


class ControllerProducerIdManager(ProducerIdManager):
    """A cluster broker's producer ids: blocks handed out by the controller (Kafka: AllocateProducerIds), so no
    two brokers ever give out the same id; nothing is persisted locally."""

    def __init__(self, data_dir: str, allocate: Callable[[], tuple[int, int]]) -> None:
        super().__init__(data_dir)
        self._allocate = allocate
        self._next = self._block_end = 0

    def generate_producer_id(self) -> int:
        with self._lock:
            if self._next >= self._block_end:
                first, count = self._allocate()
                self._next, self._block_end = first, first + count
            pid = self._next
            self._next += 1
            return pid
