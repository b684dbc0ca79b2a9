"""The ``pykafka`` CLI's pure parts: kcat formats, --add-config, durations and date-times, properties
files, the throttle (fake clock), tables, Kafka's perf lines, --time specs, find-hanging's verdicts and the
exit code of an unknown transactional id."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykafka_client.admin.types import OffsetSpec, ProducerState, TransactionDescription, TransactionState
from pykafka_client.cli.common import CliError, read_properties
from pykafka_client.cli.configs import parse_add_config
from pykafka_client.cli.groups import parse_datetime_ms, parse_duration_ms
from pykafka_client.cli.main import build_parser, exit_code_and_message
from pykafka_client.cli.offsets import offset_spec
from pykafka_client.cli.output import table
from pykafka_client.cli.perf_stats import ProducerStats, Throttle, percentile
from pykafka_client.cli.produce import parse_json_line
from pykafka_client.cli.record_format import RecordFormat
from pykafka_client.cli.transactions import hanging, open_too_long
from pykafka_client.consumer.consumer_record import ConsumerRecord, TimestampType
from pykafka_client.errors import TransactionalIdNotFoundError
from pykafka_client.structs import TopicPartition


def _record(key: bytes | None, value: bytes | None) -> ConsumerRecord[bytes | None, bytes | None]:
    return ConsumerRecord("t", 2, 41, 1700, TimestampType.CREATE_TIME, key, value, [("a", b"1"), ("b", None)])


def test_record_format_fields_escapes_and_nulls() -> None:
    fmt = RecordFormat("%t/%p/%o/%T %k=%s [%h] %K %S 100%%\\t\\\\\\n")
    assert fmt.render(_record(b"k\xff", b"v")) == b"t/2/41/1700 k\xff=v [a=1,b=] 2 1 100%\t\\\n"
    assert RecordFormat("%k|%s|%K|%S").render(_record(None, None)) == b"||-1|-1"


@pytest.mark.parametrize("bad", ["%q", "\\x", "ends with %", "ends with \\"])
def test_record_format_rejects_unknown_fields(bad: str) -> None:
    with pytest.raises(ValueError):
        RecordFormat(bad)


def test_add_config_splits_on_commas_outside_brackets() -> None:
    assert parse_add_config(["a=1,b=[x,y]", "c=d=e"]) == {"a": "1", "b": "x,y", "c": "d=e"}
    with pytest.raises(CliError):
        parse_add_config(["novalue"])


def test_durations_and_datetimes() -> None:
    assert parse_duration_ms("PT1H30M") == 5_400_000
    assert parse_duration_ms("P1DT0.5S") == 86_400_500
    for bad in ("P", "PT", "1H", "P1H"):
        with pytest.raises(CliError):
            parse_duration_ms(bad)
    assert parse_datetime_ms("1970-01-01T00:00:01.5Z") == 1500
    assert parse_datetime_ms("1970-01-01T01:00:00+01:00") == 0
    with pytest.raises(CliError):
        parse_datetime_ms("yesterday")


def test_offset_specs() -> None:
    assert offset_spec("earliest") == OffsetSpec.earliest() and offset_spec("-1") == OffsetSpec.latest()
    assert offset_spec("1234") == OffsetSpec.for_timestamp(1234)
    assert offset_spec("1970-01-01T00:00:02Z") == OffsetSpec.for_timestamp(2000)


def test_properties_file(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("# c\n! c\n\na=1\nb: two\nc three\nlong=x\\\n  y\nd==e\n", encoding="utf-8")
    assert read_properties(str(path)) == {"a": "1", "b": "two", "c": "three", "long": "xy", "d": "=e"}


def test_throttle_holds_the_rate_on_a_fake_clock() -> None:
    now = [10.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    throttle = Throttle(100, 10.0, clock=lambda: now[0], sleep=sleep)
    for i in range(300):
        throttle.wait_for(i)
    assert now[0] == pytest.approx(12.99)
    Throttle(-1, 0.0, clock=lambda: 0.0, sleep=sleep).wait_for(10**6)
    assert now[0] == pytest.approx(12.99)


def test_producer_stats_lines() -> None:
    printed: list[str] = []
    stats = ProducerStats(0.0, 5000.0, printed.append)
    for i in range(1, 11):
        stats.record(i, 100, i * 1000.0)
    assert printed == [
        "5 records sent, 1.0 records/sec (0.00 MB/sec), 3.0 ms avg latency, 5.0 ms max latency.",
        "5 records sent, 1.0 records/sec (0.00 MB/sec), 8.0 ms avg latency, 10.0 ms max latency.",
    ]
    assert stats.total_line(10_000.0) == (
        "10 records sent, 1.000000 records/sec (0.00 MB/sec), 5.50 ms avg latency, 10.00 ms max latency, "
        "6 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th."
    )
    assert percentile([], 0.5) == 0


def test_table_aligns_and_json_lines_parse() -> None:
    assert table(("A", "LONGER"), [(1, None), ("wide-cell", "x")]) == "A          LONGER\n1          -\nwide-cell  x"
    assert parse_json_line(b'{"key": null, "value": 5, "headers": [["h", "v"]]}') == {
        "key": None, "value": b"5", "headers": [("h", b"v")], "partition": None,
    }
    for bad in (b"[1]", b'{"partition": -1}', b'{"extra": 1}', b'{"headers": 3}'):
        with pytest.raises(ValueError):
            parse_json_line(bad)


def test_find_hanging_candidates_and_verdicts() -> None:
    tp, other = TopicPartition("pay", 0), TopicPartition("pay", 1)
    old_open = ProducerState(7, 0, 3, 1_000, 0, 42)
    young_open = ProducerState(8, 0, 1, 9_500, 0, 50)
    old_closed = ProducerState(9, 0, 5, 1_000, 0, None)
    found = {tp: [old_open, young_open, old_closed]}
    assert open_too_long(found, now_ms=10_000, max_ms=5_000) == {tp: [old_open]}
    assert open_too_long(found, now_ms=10_000, max_ms=0) == {tp: [old_open, young_open]}

    def txn(state: TransactionState, pid: int = 7, parts: frozenset[TopicPartition] = frozenset({TopicPartition("pay", 0)})
            ) -> dict[str, TransactionDescription]:
        return {"tx": TransactionDescription(0, state, pid, 0, 60_000, 1_000, parts)}

    candidates = {tp: [old_open]}
    assert hanging(candidates, {7: ["tx"]}, txn(TransactionState.ONGOING)) == {tp: []}
    assert hanging(candidates, {7: ["tx"]}, txn(TransactionState.PREPARE_COMMIT)) == {tp: []}
    # no transactional id, a finished transaction, another partition, another producer id: hanging
    assert hanging(candidates, {}, {}) == candidates
    assert hanging(candidates, {7: ["tx"]}, txn(TransactionState.COMPLETE_COMMIT)) == candidates
    assert hanging(candidates, {7: ["tx"]}, txn(TransactionState.ONGOING, parts=frozenset({TopicPartition("pay", 1)}))) == candidates
    assert hanging(candidates, {7: ["tx"]}, txn(TransactionState.ONGOING, pid=70)) == candidates
    assert hanging({other: []}, {}, {}) == {other: []}


def test_unknown_transactional_id_is_exit_4_with_a_hint() -> None:
    args = build_parser().parse_args(["transactions", "describe", "--transactional-id", "t"])
    code, message = exit_code_and_message(TransactionalIdNotFoundError("transactional id 't'"), args)
    assert code == 4 and "unknown transactional id" in message and "pykafka transactions list" in message
    with pytest.raises(SystemExit) as bad:
        build_parser().parse_args(["transactions", "list", "--state", "Running"])
    assert bad.value.code == 2
