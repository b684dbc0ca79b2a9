"""Every test here runs on the compiled record kernel and on the pure-Python reference."""

from __future__ import annotations

import pytest

from tests.record_impl import record_impl

__all__ = ["record_impl"]


@pytest.fixture(autouse=True)
def _on_both_record_implementations(record_impl: str) -> str:
    return record_impl
