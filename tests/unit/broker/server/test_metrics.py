"""Metrics registry and Prometheus text format; IdleMeter on a mock clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.metrics import (
    REQUEST_TIME_METRICS,
    BrokerMetrics,
    Counter,
    Histogram,
    IdleMeter,
    inc_pair,
    observe_each,
)
from pykafka_client.utils.time import MockTime


def test_prometheus_text() -> None:
    m = BrokerMetrics(MockTime())
    m.record_request("Produce", {"TotalTimeMs": 2.0, "LocalTimeMs": 1.0})
    m.record_request("Produce", {"TotalTimeMs": 4.0, "LocalTimeMs": 1.0})
    m.gauge("kafka_x", lambda: 3.0, kind='a"b')
    text = m.render_prometheus()
    assert '# TYPE kafka_network_RequestMetrics_Requests_total counter' in text
    assert 'kafka_network_RequestMetrics_Requests_total{request="Produce"} 2' in text
    assert 'kafka_network_RequestMetrics_TotalTimeMs_count{request="Produce"} 2' in text
    assert 'kafka_network_RequestMetrics_TotalTimeMs_sum{request="Produce"} 6.000' in text
    assert 'kafka_network_RequestMetrics_TotalTimeMs_max{request="Produce"} 4.000' in text
    assert 'kafka_x{kind="a\\"b"} 3' in text


def test_failing_gauge_does_not_break_the_scrape() -> None:
    m = BrokerMetrics(MockTime())

    def bad() -> float:
        raise RuntimeError("closed")

    m.gauge("kafka_bad", bad)
    assert "kafka_bad" not in m.render_prometheus()


def test_idle_meter() -> None:
    t = MockTime()
    meter = IdleMeter(2, t, window_ms=10_000)
    t.sleep(1000)
    meter.record(500_000_000)  # one thread idle 0.5 s of 1 s, the other busy
    assert abs(meter.value() - 0.25) < 1e-9


def test_idle_meter_rolls_its_window_at_the_time_the_caller_gives() -> None:
    t = MockTime()
    meter = IdleMeter(1, t, window_ms=2_000)  # buckets of a second
    meter.record(500_000_000, t.nanoseconds() + 1_000_000_000)  # read a second from now: a new bucket starts there
    t.sleep(2500)
    # the first bucket (nothing idle) has left the window: 0.5 s idle of the 1.5 s since the second one started
    assert abs(meter.value() - 1 / 3) < 1e-9


def test_request_metrics_from_both_recorders_add_up_and_errors_stay_apart() -> None:
    m = BrokerMetrics(MockTime())
    m.record_request("Fetch", {"TotalTimeMs": 2.0})
    m.record_request_times("Fetch", 4.0, 0.0, 1.0, 0.0, 0.0, 0.5)
    m.record_request_times("Fetch", 6.0, 0.0, 1.0, 0.0, 0.0, 0.5)
    m.record_error("Fetch", "NONE")
    snap = m.snapshot()
    assert snap['kafka_network_RequestMetrics_Requests_total{request="Fetch"}'] == 3
    assert snap['kafka_network_RequestMetrics_TotalTimeMs_count{request="Fetch"}'] == 3
    assert snap['kafka_network_RequestMetrics_TotalTimeMs_sum{request="Fetch"}'] == 12.0
    assert snap['kafka_network_RequestMetrics_TotalTimeMs_max{request="Fetch"}'] == 6.0
    assert snap['kafka_network_RequestMetrics_LocalTimeMs_count{request="Fetch"}'] == 2
    assert snap['kafka_network_RequestMetrics_Errors_total{error="NONE",request="Fetch"}'] == 1


def test_observe_each_updates_each_histogram_at_its_position() -> None:
    a, b = Histogram(), Histogram()
    observe_each((a, b), (3.0, 1.0))
    observe_each((a, b), (2.0, 5.0))
    assert (a.count, a.sum, a.min, a.max) == (2, 5.0, 2.0, 3.0)
    assert (b.count, b.sum, b.min, b.max) == (2, 6.0, 1.0, 5.0)
    a.update(7.0)  # a single update is the same observation
    assert (a.count, a.sum, a.min, a.max) == (3, 12.0, 2.0, 7.0)
    with pytest.raises(ValueError):
        observe_each((a, b), (1.0,))  # one value per histogram


def test_request_times_go_to_their_histograms_in_order() -> None:
    m = BrokerMetrics(MockTime())
    m.record_request_times("Produce", 6.0, 1.0, 2.0, 0.0, 0.5, 0.25)
    m.record_request_times("Produce", 4.0, 1.0, 1.0, 0.0, 1.5, 0.75)
    snap = m.snapshot()
    sums = {name: snap[f'kafka_network_RequestMetrics_{name}_sum{{request="Produce"}}'] for name in REQUEST_TIME_METRICS}
    assert sums == {"TotalTimeMs": 10.0, "RequestQueueTimeMs": 2.0, "LocalTimeMs": 3.0, "RemoteTimeMs": 0.0,
                    "ResponseQueueTimeMs": 2.0, "ResponseSendTimeMs": 1.0}
    assert snap['kafka_network_RequestMetrics_TotalTimeMs_max{request="Produce"}'] == 6.0
    assert snap['kafka_network_RequestMetrics_Requests_total{request="Produce"}'] == 2


def test_counters_made_together_share_one_lock_and_are_the_registrys() -> None:
    m = BrokerMetrics(MockTime())
    before = m.counter("kafka_a_total")  # made before: keeps its own lock
    a, b, c = m.counters("kafka_a_total", "kafka_b_total", "kafka_c_total")
    assert a is before and b is m.counter("kafka_b_total") and c is m.counter("kafka_c_total")
    assert b.lock is c.lock and a.lock is not b.lock
    inc_pair(b, 3, c, 4)  # one hold of the shared lock
    inc_pair(a, 5, b, 6)  # two locks: one after the other
    assert (a.value, b.value, c.value) == (5, 9, 4)
    assert m.snapshot()["kafka_b_total"] == 9 and m.snapshot()["kafka_c_total"] == 4
    assert not b.lock.locked() and not a.lock.locked()


def test_inc_pair_is_two_incs() -> None:
    first, second = Counter(), Counter()
    inc_pair(first, 1, second, 2)
    inc_pair(first, 10, second, 20)
    assert (first.value, second.value) == (11, 22)


def test_the_log_counts_bytes_and_messages_in_under_one_lock(tmp_path: Path) -> None:
    from mini_broker.broker import MiniBroker
    from pykafka_client.protocol.records.builder import MemoryRecordsBuilder
    from pykafka_client.structs import TopicPartition

    with MiniBroker(data_dir=str(tmp_path)) as broker:
        rm = broker.replica_manager
        assert rm is not None and broker.metrics is not None
        rm.create_topic("t", 1, {})
        builder = MemoryRecordsBuilder(write_limit=1 << 20)
        for _ in range(3):
            builder.append(1_700_000_000_000, None, b"x" * 10)
        records = builder.build()
        rm.append_records(1000, 1, [(TopicPartition("t", 0), memoryview(bytearray(records)))], lambda results: None)
        bytes_in = broker.metrics.counter("kafka_server_BrokerTopicMetrics_BytesIn_total")
        messages_in = broker.metrics.counter("kafka_server_BrokerTopicMetrics_MessagesIn_total")
        assert (bytes_in.value, messages_in.value) == (len(records), 3)
        assert bytes_in.lock is messages_in.lock
