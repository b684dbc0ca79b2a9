"""PLACEHOLDER on the spark-read branch so mypy is clean before the merge: the write helper's module
(branch spark-write) replaces this file at merge."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType


def create_batch_writer(options: Mapping[str, str], schema: StructType, overwrite: bool) -> DataSourceWriter:
    raise NotImplementedError("the write side of the pykafka data source is not on this branch")


def create_stream_writer(options: Mapping[str, str], schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
    raise NotImplementedError("the write side of the pykafka data source is not on this branch")
