"""confluent-kafka with its ShareConsumer, for the share-group interop tests: a test module that needs it calls
:func:`confluent_with_share_consumer` at import (skipped without one locally; failed on CI, whose interop extra
installs a confluent-kafka that has it)."""

from __future__ import annotations

import os
from typing import Any

import pytest


def confluent_with_share_consumer() -> Any:
    ck = pytest.importorskip("confluent_kafka")
    if not hasattr(ck, "ShareConsumer"):
        if os.environ.get("CI"):
            pytest.fail("this confluent-kafka has no ShareConsumer (2.15+ has it)", pytrace=False)
        pytest.skip("this confluent-kafka has no ShareConsumer (2.15+ has it)", allow_module_level=True)
    return ck
