"""Spark fixtures: one local[2] SparkSession for the whole run (starting a JVM costs seconds), with the
``pykafka`` source registered, and a MiniBroker per test module that the Spark workers reach on loopback.

Without pyspark (or Java) the Spark tests skip on a developer box and fail in CI, like the peer fixtures.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from mini_broker.broker import MiniBroker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _missing(what: str) -> None:
    message = f"{what} is not available (pip install -e '.[spark]'; Spark needs Java 17+)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        _missing("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _missing("Java")
    from spark_connector.source import KafkaDataSource

    # Spark's Python workers run `python3` from PATH with their own PYTHONPATH: make them use this interpreter
    # (pyarrow) and import this checkout's packages (not another install of them).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p)
    session = (SparkSession.builder.master("local[2]").appName("pykafka-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "1g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(KafkaDataSource)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def spark_broker() -> Iterator[MiniBroker]:
    """A MiniBroker shared by one test module (use fresh topic names per test)."""
    with MiniBroker(num_network_threads=1, num_io_threads=2) as broker:
        yield broker
