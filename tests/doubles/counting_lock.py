"""A re-entrant lock that counts its acquisitions: put in place of an object's lock, it tells whether a call took it."""

from __future__ import annotations

import threading
from typing import Any


class CountingLock:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.acquired = 0

    def __enter__(self) -> bool:
        self.acquired += 1
        return self._lock.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._lock.__exit__(*exc)
