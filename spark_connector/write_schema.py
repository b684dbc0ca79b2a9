"""The columns a write takes, checked against the DataFrame's schema on the driver with Spark's messages
(KafkaWriter.validateQuery): ``value`` string/binary (required), ``key`` string/binary, ``topic`` string (or the
``topic`` option, which overrides it), ``headers`` array<struct<key:string,value:binary>>, ``partition`` int,
``timestamp`` timestamp. Names match case-insensitively, as Spark resolves attributes; other columns are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from spark_connector.write_options import KafkaWriteOptionError

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType(), False), StructField("value", BinaryType(), True)]), False
)


@dataclass(frozen=True)
class WriteColumns:
    """The DataFrame's own name of each column the sink uses (None: absent or overridden by the option)."""

    value: str
    key: str | None = None
    topic: str | None = None
    headers: str | None = None
    partition: str | None = None
    timestamp: str | None = None


def _find(schema: StructType, name: str) -> StructField | None:
    for f in schema.fields:
        if f.name.lower() == name:
            return f
    return None


def _unsupported(name: str, t: DataType, expected: str) -> KafkaWriteOptionError:
    return KafkaWriteOptionError(f"{name} attribute unsupported type {t.simpleString()}. {name} must be a(n) {expected}")


def _is_headers_type(t: DataType) -> bool:
    if not isinstance(t, ArrayType) or not isinstance(t.elementType, StructType):
        return False
    fields = t.elementType.fields
    return (
        len(fields) == 2
        and fields[0].name == "key" and isinstance(fields[0].dataType, StringType)
        and fields[1].name == "value" and isinstance(fields[1].dataType, BinaryType)
    )


def validate_write_schema(schema: StructType, topic_option: str | None) -> WriteColumns:
    topic = _find(schema, "topic")
    if topic_option is None:
        if topic is None:
            raise KafkaWriteOptionError(
                "topic option required when no 'topic' attribute is present. Use the topic option for setting a topic."
            )
        if not isinstance(topic.dataType, StringType):
            raise _unsupported("topic", topic.dataType, "string")
    value = _find(schema, "value")
    if value is None:
        raise KafkaWriteOptionError("Required attribute 'value' not found")
    if not isinstance(value.dataType, (StringType, BinaryType)):
        raise _unsupported("value", value.dataType, "string or a(n) binary")
    key = _find(schema, "key")
    if key is not None and not isinstance(key.dataType, (StringType, BinaryType)):
        raise _unsupported("key", key.dataType, "string or a(n) binary")
    headers = _find(schema, "headers")
    if headers is not None and not _is_headers_type(headers.dataType):
        raise _unsupported("headers", headers.dataType, HEADERS_TYPE.simpleString())
    partition = _find(schema, "partition")
    if partition is not None and not isinstance(partition.dataType, IntegerType):
        raise _unsupported("partition", partition.dataType, "int")
    timestamp = _find(schema, "timestamp")
    if timestamp is not None and not isinstance(timestamp.dataType, (TimestampType, TimestampNTZType)):
        raise _unsupported("timestamp", timestamp.dataType, "timestamp")
    return WriteColumns(
        value=value.name,
        key=key.name if key else None,
        topic=topic.name if topic is not None and topic_option is None else None,
        headers=headers.name if headers else None,
        partition=partition.name if partition else None,
        timestamp=timestamp.name if timestamp else None,
    )
