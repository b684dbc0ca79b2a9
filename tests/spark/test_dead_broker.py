"""A Spark read against a dead broker fails once, within the configured timeout, with the cause (issue 22
item 2): the driver-side offset lookup does not retry a timeout that already used the AdminClient's whole
``kafka.default.api.timeout.ms``, and the error Spark raises carries the admin's message (the address and
the connection error)."""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]

TIMEOUT_MS = 3000
#: a retry would wait this long first: a read that fails sooner than timeout + interval was not retried
#: (Spark's own overhead, a planner worker started per call, takes seconds on a loaded machine)
RETRY_INTERVAL_MS = 60_000


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_batch_read_against_a_dead_broker_fails_once_within_the_timeout_with_the_cause(spark: SparkSession) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    df = (spark.read.format("pykafka")
          .option("kafka.bootstrap.servers", address)
          .option("kafka.default.api.timeout.ms", str(TIMEOUT_MS))
          .option("fetchOffset.numRetries", "3")
          .option("fetchOffset.retryIntervalMs", str(RETRY_INTERVAL_MS))
          .option("subscribe", "t")
          .load())
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        df.collect()
    elapsed = time.monotonic() - started
    # before the fix: 3 rounds of the timeout, 2 retry intervals apart
    assert elapsed < (TIMEOUT_MS + RETRY_INTERVAL_MS) / 1000, f"took {elapsed:.1f} s: the lookup was retried"
    text = str(info.value)
    assert "waiting for a broker to take the METADATA request" in text
    assert f"{address}: connection refused" in text
