"""The ``pykafka`` data source: the entry point Spark instantiates on the driver (``DataSource``).

It only names the source, fixes the schema and hands the options to the readers and writers, which live in
their own modules (imported lazily so a batch read does not import the write path, and the reverse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType

#: the name users pass to ``format(...)``
SOURCE_NAME = "pykafka"


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType | str:
        from spark_connector.read_schema import read_schema

        return read_schema(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        from spark_connector.batch_reader import create_batch_reader

        return create_batch_reader(self.options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from spark_connector.stream_reader import create_stream_reader

        return create_stream_reader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from spark_connector.writer import create_batch_writer

        return create_batch_writer(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from spark_connector.writer import create_stream_writer

        return create_stream_writer(self.options, schema, overwrite)
