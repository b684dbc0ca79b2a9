"""Nothing unpicklable in the reader state: Spark pickles the readers (to executors) and the partitions."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql.types import StringType, StructField, StructType

from spark_connector.batch_reader import KafkaBatchReader, KafkaInputPartition, create_batch_reader
from spark_connector.read_schema import FIXED_SCHEMA_MESSAGE, read_schema
from spark_connector.stream_reader import KafkaStreamReader, create_stream_reader

OPTIONS = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t", "includeHeaders": "true"}


def test_batch_reader_and_partitions_pickle() -> None:
    reader = create_batch_reader(OPTIONS, read_schema(OPTIONS))
    clone = pickle.loads(pickle.dumps(reader))
    assert isinstance(clone, KafkaBatchReader) and clone.options == reader.options
    part = KafkaInputPartition("t", 3, 10, 20)
    assert pickle.loads(pickle.dumps(part)) == part
    assert part.offset_range().size == 10


def test_stream_reader_pickles_with_its_admin_client_dropped() -> None:
    reader = create_stream_reader(OPTIONS, read_schema(OPTIONS))
    assert reader.offset_reader.admin is not None  # created lazily, as latestOffset() would
    reader._initial = {"t": {"0": 5}}
    clone = pickle.loads(pickle.dumps(reader))
    reader.stop()
    assert isinstance(clone, KafkaStreamReader)
    assert clone._initial == {"t": {"0": 5}}
    assert clone.offset_reader._admin is None


def test_schema_checks_the_general_options_so_load_fails() -> None:
    with pytest.raises(ValueError, match="One of the following options must be specified"):
        read_schema({"kafka.bootstrap.servers": "h:1"})


def test_user_schema_is_rejected_with_sparks_message() -> None:
    custom = StructType([StructField("value", StringType())])
    for create in (create_batch_reader, create_stream_reader):
        with pytest.raises(ValueError, match=FIXED_SCHEMA_MESSAGE):
            create(OPTIONS, custom)
    # the schema without headers is "custom" when includeHeaders is true
    with pytest.raises(ValueError, match=FIXED_SCHEMA_MESSAGE):
        create_batch_reader(OPTIONS, read_schema({**OPTIONS, "includeHeaders": "false"}))
