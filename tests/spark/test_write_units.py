"""The write path's pure parts, without a SparkSession: Arrow batches to send arguments, option parsing,
where the exactly-once state lives and the transactional ids."""

from __future__ import annotations

import datetime as dt

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from spark_connector.arrow_records import records, timestamp_ms_column  # noqa: E402
from spark_connector.exactly_once import SinkState, state_dir_for, transactional_id_base  # noqa: E402
from spark_connector.write_options import KafkaWriteOptionError, parse_write_options  # noqa: E402
from spark_connector.write_schema import WriteColumns  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("unit", "raw", "expected"), [
    ("s", [1_700_000_000, None, 0], [1_700_000_000_000, None, 0]),
    ("ms", [1_700_000_000_123, None], [1_700_000_000_123, None]),
    ("us", [1_700_000_000_123_999, None, -1, -1000, -1001], [1_700_000_000_123, None, -1, -1, -2]),
    ("ns", [1_700_000_000_123_999_999, None, -1_000_001], [1_700_000_000_123, None, -2]),
])
def test_timestamps_become_epoch_milliseconds_in_arrow(unit: str, raw: list[int | None], expected: list[int | None]) -> None:
    """An int64 Arrow array (what send_batch takes without a Python int per row), floor-rounded as ``//``."""
    out = timestamp_ms_column(pa.array(raw, pa.timestamp(unit, tz="UTC")))
    assert isinstance(out, pa.Array) and out.type == pa.int64()
    assert out.to_pylist() == [None if v is None else v // {"s": 1, "ms": 1, "us": 1000, "ns": 10**6}[unit] * (1000 if unit == "s" else 1) for v in raw] == expected


def test_arrow_columns_become_send_arguments() -> None:
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)
    batch = pa.RecordBatch.from_pydict({
        "topic": pa.array(["a", "b"]),
        "key": pa.array(["k\u00e9", None], pa.large_string()),
        "value": pa.array([b"\x00\xff", None], pa.binary()),
        "headers": pa.array([[{"key": "h", "value": b"v"}, {"key": "n", "value": None}], None],
                            pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        "partition": pa.array([3, None], pa.int32()),
        "timestamp": pa.array([ts, None], pa.timestamp("us", tz="UTC")),
    })
    cols = WriteColumns(value="value", key="key", topic="topic", headers="headers", partition="partition",
                        timestamp="timestamp")
    assert list(records(batch, cols, None)) == [
        ("a", "k\u00e9".encode(), b"\x00\xff", [("h", b"v"), ("n", None)], 3, int(ts.timestamp() * 1000)),
        ("b", None, None, None, None, None),
    ]
    assert [r[0] for r in records(batch, cols, "forced")] == ["forced", "forced"]


def test_null_topic_raises_sparks_message() -> None:
    batch = pa.RecordBatch.from_pydict({"topic": pa.array([None], pa.string()), "value": pa.array([b"v"])})
    with pytest.raises(KafkaWriteOptionError, match="null topic present in the data"):
        list(records(batch, WriteColumns(value="value", topic="topic"), None))


def test_exactly_once_options() -> None:
    base = {"kafka.bootstrap.servers": "h:1", "exactlyOnce": "true", "checkpointlocation": "file:/tmp/cp-x"}
    o = parse_write_options(base, streaming=True)
    assert o.producer_config["transaction.timeout.ms"] == "900000"
    assert state_dir_for(o) == "/tmp/cp-x/pykafka-sink"
    assert transactional_id_base(o).startswith("pykafka-spark-")
    assert transactional_id_base(o) != transactional_id_base(
        parse_write_options({**base, "checkpointlocation": "/tmp/other"}, streaming=True))
    with pytest.raises(KafkaWriteOptionError, match=r"exactlyOnce\.stateDir"):
        state_dir_for(parse_write_options({**base, "checkpointlocation": "s3a://b/cp"}, streaming=True))
    assert state_dir_for(parse_write_options({**base, "checkpointlocation": "s3a://b/cp",
                                              "exactlyOnce.stateDir": "/mnt/s"}, streaming=True)) == "/mnt/s"
    with pytest.raises(KafkaWriteOptionError, match="idempotent"):
        parse_write_options({**base, "kafka.enable.idempotence": "false"}, streaming=True)
    with pytest.raises(KafkaWriteOptionError, match=r"transactional\.id"):
        parse_write_options({**base, "kafka.transactional.id": "x"}, streaming=True)


def test_sink_state_round_trip(tmp_path: object) -> None:
    state = SinkState(str(tmp_path))
    assert state.last_committed() is None and state.intent() is None
    state.write_intent(4, [{"transactional_id": "t", "producer_id": 1, "epoch": 2}])
    assert state.intent() == {"batch_id": 4, "transactions": [{"transactional_id": "t", "producer_id": 1, "epoch": 2}]}
    state.mark_committed(4)
    assert state.last_committed() == 4 and state.intent() is None
