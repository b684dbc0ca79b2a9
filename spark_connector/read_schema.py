"""The fixed schema of a Kafka read (Spark's ``KafkaRecordToRowConverter.kafkaSchema``), as a Spark
``StructType`` for ``schema()`` and as the Arrow schema the rows leave ``read()`` in.

``key binary, value binary, topic string, partition int, offset long, timestamp timestamp,
timestampType int``, plus ``headers array<struct<key:string,value:binary>>`` when ``includeHeaders`` is
true. Built in Python (no DDL parsing: that needs a SparkContext, absent in the planner workers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_connector.options import INCLUDE_HEADERS, bool_option, check_general_options, lower_keys

#: Spark's message when ``.schema(...)`` is given to a Kafka read
FIXED_SCHEMA_MESSAGE = "Kafka source has a fixed schema and cannot be set with a custom one"

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def read_schema(options: Mapping[str, Any]) -> StructType:
    """``schema()`` of the source: the fixed schema, with ``headers`` when ``includeHeaders`` is true. Checks
    the options common to batch and streaming reads first (``schema()`` is the one call ``load()`` makes;
    writes never call it)."""
    check_general_options(options)
    return kafka_schema(bool_option(lower_keys(options), INCLUDE_HEADERS, "includeHeaders", False))


def check_schema(schema: StructType, include_headers: bool) -> None:
    """Reject a user-given schema (Spark hands ``.schema(...)`` straight to ``reader()``) with Spark's
    message."""
    if schema != kafka_schema(include_headers):
        raise ValueError(FIXED_SCHEMA_MESSAGE)
