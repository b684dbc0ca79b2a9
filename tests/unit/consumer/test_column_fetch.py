"""Fetcher.collect_columns / column_fetch.poll_columns: whole batches as columns, with the same positions,
skipping (control batches, aborted transactions under read_committed) and errors as collect_fetch."""

from __future__ import annotations

from array import array

import pytest

from pykafka_client.consumer.column_fetch import FetchedColumns
from pykafka_client.consumer.fetcher import READ_COMMITTED
from pykafka_client.errors import CorruptRecordError
from pykafka_client.protocol.messages.fetch_response import FetchResponse
from pykafka_client.protocol.records.columns import RecordColumns
from tests.record_impl import record_impl  # noqa: F401 (the fixture, parametrized native/python)
from tests.unit.consumer.helpers import batch, control_batch
from tests.unit.consumer.test_fetcher import TP0, assign, make, response

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("record_impl")]


def offsets(cols: RecordColumns) -> list[int]:
    return array("q", cols.offsets).tolist()


def values(cols: RecordColumns) -> list[bytes]:
    ends = array("i", cols.value_offsets).tolist()
    return [cols.value_data[ends[i]:ends[i + 1]] for i in range(cols.num_records)]


def rows(fetched: list[FetchedColumns]) -> list[tuple[int, bytes]]:
    """(offset, value) of the rows a reader keeps: at or after each start offset."""
    return [
        (o, v) for f in fetched for c in f.columns for o, v in zip(offsets(c), values(c), strict=True)
        if o >= f.start_offset
    ]


def position(subs: object, tp: object) -> int:
    pos = subs.position(tp)  # type: ignore[attr-defined]
    assert pos is not None
    return int(pos.offset)


def test_batches_as_columns_and_position_past_them() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b"], timestamp=5000) + batch(2, [b"c"]))}))
    got = f.collect_columns()[TP0]
    assert [f_.start_offset for f_ in got] == [0]
    first, second = got[0].columns
    assert (offsets(first), values(first), offsets(second)) == ([0, 1], [b"a", b"b"], [2])
    assert array("q", first.timestamps).tolist() == [5000, 5001]
    assert first.header_key_data == b"h" * 2 and first.header_value_data == b"1" * 2
    assert position(subs, TP0) == 3
    assert f.collect_columns() == {}


def test_read_committed_skips_aborted_transactions_and_control_batches() -> None:
    f, env, subs = make(isolation_level=READ_COMMITTED)
    assign(subs, TP0)
    data = (
        batch(0, [b"c1", b"c2"], producer_id=1, transactional=True)
        + control_batch(2, 1, commit=True)
        + batch(3, [b"a1", b"a2"], producer_id=2, transactional=True, compression=3)
        + control_batch(5, 2, commit=False)
        + batch(6, [b"plain"], compression=1)
        + control_batch(7, 1, commit=True)
    )
    f.send_fetches()
    aborted = [FetchResponse.AbortedTransaction(producer_id=2, first_offset=3)]
    env.respond(response({TP0: (0, data)}, aborted_transactions=aborted))
    assert rows(f.collect_columns()[TP0]) == [(0, b"c1"), (1, b"c2"), (6, b"plain")]
    assert f.collect_columns() == {}
    assert position(subs, TP0) == 8  # past the trailing commit marker


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_batch_starting_before_the_position(codec: int) -> None:
    f, env, subs = make()
    assign(subs, TP0, offset=2)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b", b"c", b"d"], compression=codec))}))
    got = f.collect_columns()[TP0]
    assert got[0].start_offset == 2
    assert offsets(got[0].columns[0]) == [0, 1, 2, 3]  # whole batch: the reader drops what is before 2
    assert rows(got) == [(2, b"c"), (3, b"d")]
    assert position(subs, TP0) == 4


def test_max_poll_records_counts_whole_batches() -> None:
    f, env, subs = make(max_poll_records=2)
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b", b"c"]) + batch(3, [b"d"]) + batch(4, [b"e"]))}))
    assert rows(f.collect_columns()[TP0]) == [(0, b"a"), (1, b"b"), (2, b"c")]  # one batch, over the limit
    assert position(subs, TP0) == 3
    assert rows(f.collect_columns()[TP0]) == [(3, b"d"), (4, b"e")]


def test_continues_where_collect_fetch_stopped_inside_a_batch() -> None:
    f, env, subs = make(max_poll_records=1)
    assign(subs, TP0)
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b", b"c"]))}))
    assert [r.offset for r in f.collect_fetch()[TP0]] == [0]
    got = f.collect_columns()[TP0]
    assert rows(got) == [(1, b"b"), (2, b"c")]
    assert position(subs, TP0) == 3


def test_corrupt_batch_after_good_ones_is_raised_next_and_sticks() -> None:
    f, env, subs = make()
    assign(subs, TP0)
    bad = bytearray(batch(2, [b"x", b"y"]))
    bad[-1] ^= 0xFF  # CRC mismatch
    f.send_fetches()
    env.respond(response({TP0: (0, batch(0, [b"a", b"b"]) + bytes(bad))}))
    assert rows(f.collect_columns()[TP0]) == [(0, b"a"), (1, b"b")]
    for _ in range(2):
        with pytest.raises(CorruptRecordError) as e:
            f.collect_columns()
        assert (e.value.topic_partition, e.value.offset) == (TP0, 2)  # type: ignore[attr-defined]
    assert position(subs, TP0) == 2  # nothing skipped
