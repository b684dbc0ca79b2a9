"""The consumer's light-weight single-thread check (Java: KafkaConsumer.acquire / release).

Not a lock: a second thread entering while another one is inside fails at once with
ConcurrentModificationError instead of waiting. The owning thread may enter again (a rebalance
listener calling ``commit_sync`` from inside ``poll``), so entries are counted.
"""

from __future__ import annotations

import threading

from pykafka_client.errors import ConcurrentModificationError

_NO_CURRENT_THREAD = -1


class SingleThreadGuard:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current_thread = _NO_CURRENT_THREAD
        self._refcount = 0

    def acquire(self) -> None:
        tid = threading.get_ident()
        with self._lock:
            if self._current_thread not in (_NO_CURRENT_THREAD, tid):
                raise ConcurrentModificationError(
                    "KafkaConsumer is not safe for multi-threaded access: it is in use by another thread"
                )
            self._current_thread = tid
            self._refcount += 1

    def release(self) -> None:
        with self._lock:
            self._refcount -= 1
            if self._refcount == 0:
                self._current_thread = _NO_CURRENT_THREAD
