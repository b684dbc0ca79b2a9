"""RequestFuture contract (statements 48-51)."""

from __future__ import annotations

import threading

import pytest

from pykafka_client.errors import DisconnectError, IllegalStateError
from pykafka_client.errors_base import KafkaError
from pykafka_client.network.request_future import RequestFuture, RequestFutureAdapter


class Recorder:
    def __init__(self) -> None:
        self.successes: list[object] = []
        self.failures: list[BaseException] = []

    def on_success(self, value: object) -> None:
        self.successes.append(value)

    def on_failure(self, exception: BaseException) -> None:
        self.failures.append(exception)


def test_s48_complete_twice_raises_illegal_state() -> None:
    f: RequestFuture[int] = RequestFuture()
    f.complete(1)
    with pytest.raises(IllegalStateError):
        f.complete(2)
    with pytest.raises(IllegalStateError):
        f.raise_(KafkaError("x"))
    assert f.value() == 1


def test_s48_raise_twice_raises_illegal_state() -> None:
    f: RequestFuture[int] = RequestFuture()
    err = DisconnectError("gone")
    f.raise_(err)
    with pytest.raises(IllegalStateError):
        f.raise_(KafkaError("again"))
    with pytest.raises(IllegalStateError):
        f.complete(3)
    assert f.exception() is err


def test_s48_complete_with_exception_instance_raises_value_error() -> None:
    f: RequestFuture[object] = RequestFuture()
    with pytest.raises(ValueError):
        f.complete(RuntimeError("not a value"))
    assert not f.is_done()


def test_s49_value_after_failure_and_exception_after_success_raise() -> None:
    failed: RequestFuture[int] = RequestFuture()
    failed.raise_(KafkaError("boom"))
    with pytest.raises(IllegalStateError):
        failed.value()
    ok: RequestFuture[int] = RequestFuture()
    ok.complete(5)
    with pytest.raises(IllegalStateError):
        ok.exception()
    pending: RequestFuture[int] = RequestFuture()
    with pytest.raises(IllegalStateError):
        pending.value()
    with pytest.raises(IllegalStateError):
        pending.exception()


def test_s49_is_retriable_follows_the_exception() -> None:
    f: RequestFuture[int] = RequestFuture()
    f.raise_(DisconnectError("x"))
    assert f.is_retriable()
    g: RequestFuture[int] = RequestFuture()
    g.raise_(KafkaError("fatal"))
    assert not g.is_retriable()


def test_s50_listener_added_before_completion_fires_once() -> None:
    f: RequestFuture[int] = RequestFuture()
    rec = Recorder()
    f.add_listener(rec)
    assert rec.successes == []
    f.complete(7)
    assert rec.successes == [7]
    with pytest.raises(IllegalStateError):
        f.complete(8)
    assert rec.successes == [7]


def test_s50_listener_added_after_failure_fires_once() -> None:
    f: RequestFuture[int] = RequestFuture()
    err = KafkaError("x")
    f.raise_(err)
    rec = Recorder()
    f.add_listener(rec)
    assert rec.failures == [err]
    assert rec.successes == []


def test_s50_listeners_before_and_after_completion_each_fire_once() -> None:
    f: RequestFuture[str] = RequestFuture()
    before, after = Recorder(), Recorder()
    f.add_listener(before)
    f.complete("v")
    f.add_listener(after)
    assert before.successes == ["v"] and after.successes == ["v"]


def _race_once() -> None:
    f: RequestFuture[int] = RequestFuture()
    recs = [Recorder() for _ in range(50)]
    barrier = threading.Barrier(3)
    wins: list[int] = []

    def add() -> None:
        barrier.wait()
        for r in recs:
            f.add_listener(r)

    def complete(v: int) -> None:
        barrier.wait()
        try:
            f.complete(v)
            wins.append(v)
        except IllegalStateError:
            pass

    threads = [
        threading.Thread(target=add),
        threading.Thread(target=complete, args=(1,)),
        threading.Thread(target=complete, args=(2,)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert all(r.successes == wins for r in recs)


def test_s50_concurrent_completion_notifies_every_listener_exactly_once() -> None:
    for _ in range(20):
        _race_once()


class _Double(RequestFutureAdapter[int, int]):
    def on_success(self, value: int, future: RequestFuture[int]) -> None:
        future.complete(value * 2)


def test_s51_compose_maps_success_through_adapter() -> None:
    f: RequestFuture[int] = RequestFuture()
    composed = f.compose(_Double())
    assert not composed.is_done()
    f.complete(21)
    assert composed.value() == 42


def test_s51_compose_propagates_failure() -> None:
    f: RequestFuture[int] = RequestFuture()
    composed = f.compose(_Double())
    err = DisconnectError("x")
    f.raise_(err)
    assert composed.exception() is err


def test_s51_chain_copies_success_and_failure() -> None:
    a: RequestFuture[int] = RequestFuture()
    b: RequestFuture[int] = RequestFuture()
    a.chain(b)
    a.complete(3)
    assert b.value() == 3
    c: RequestFuture[int] = RequestFuture()
    d: RequestFuture[int] = RequestFuture()
    c.chain(d)
    err = KafkaError("e")
    c.raise_(err)
    assert d.exception() is err


def test_factories() -> None:
    assert RequestFuture.void_success().value() is None
    assert RequestFuture.no_brokers_available().is_retriable()
    assert RequestFuture.coordinator_not_available().is_retriable()
