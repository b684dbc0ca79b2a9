"""Entry points of the write path (called by :class:`spark_connector.source.KafkaDataSource` on the driver):
options and columns are validated here, so errors surface at ``save()`` / ``start()``.

Save modes: Spark hands a Python data source only ``append`` and ``overwrite``. Batch ``append`` writes;
batch ``overwrite`` is rejected as the built-in sink rejects it (a topic cannot be truncated). Streaming
output modes ``append``, ``update`` and ``complete`` (which Spark passes as ``overwrite``) all append, as in
the built-in sink.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from spark_connector.exactly_once import ExactlyOnceCommitter, transactional_id_base
from spark_connector.write_options import KafkaWriteOptionError, parse_write_options
from spark_connector.write_schema import validate_write_schema

if TYPE_CHECKING:
    from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter
    from pyspark.sql.types import StructType

OVERWRITE_MESSAGE = (
    "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append (use .mode(\"append\"): Spark "
    "does not let a Python data source accept ErrorIfExists, the default)."
)


def create_batch_writer(options: Mapping[str, str], schema: StructType, overwrite: bool) -> DataSourceWriter:
    from spark_connector.batch_writer import KafkaBatchWriter

    if overwrite:
        raise KafkaWriteOptionError(OVERWRITE_MESSAGE)
    write_options = parse_write_options(options, streaming=False)
    columns = validate_write_schema(schema, write_options.topic)
    return KafkaBatchWriter(write_options, columns)


def create_stream_writer(options: Mapping[str, str], schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
    from spark_connector.stream_writer import ExactlyOnceStreamWriter, KafkaStreamWriter

    write_options = parse_write_options(options, streaming=True)
    columns = validate_write_schema(schema, write_options.topic)
    if not write_options.exactly_once:
        return KafkaStreamWriter(write_options, columns)
    # before this micro-batch's tasks run: finish a commit a previous driver left half done
    ExactlyOnceCommitter(write_options).recover()
    return ExactlyOnceStreamWriter(write_options, columns, transactional_id_base(write_options))
