"""A single broker's common Produce request above the log in one compiled call (the kernel's ``ProduceAppender``,
mini_broker/server/produce_append.py) against the reference (the handler's and the replica manager's Python path):
two brokers, one without the appender, get the same random produce requests (random topics and partitions, unknown
and invalid ones, compacted ones, several partitions and duplicates, idempotent producers' next batches, retries,
sequence gaps, epoch bumps, batches without a producer, transactional batches with and without a transactional id,
corrupt and empty records, batches over a topic's max.message.bytes, acks 1, -1, 0 and invalid ones, delayed fetches
and produces watching a partition, every request version from 3 to 11, a fault injector dropping answers, logs keeping
a leader epoch cache). After every request: the same answer (its kind and bytes) and the same completed purgatory
operations; at the end the same logs (records, offsets, high watermark, log start offset), producer states and produce
metrics."""

from __future__ import annotations

import gc
import glob
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.broker import MiniBroker
from mini_broker.log.unified_log import Log
from mini_broker.network.request_channel import Request, Response
from mini_broker.purgatory import TopicPartitionOperationKey
from mini_broker.purgatory.delayed_operation import DelayedOperation
from mini_broker.purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from mini_broker.server.apis import produce as produce_api
from mini_broker.server.faults import FaultInjector
from mini_broker.server.replica_manager import ReplicaManager
from pykafka_client.protocol import headers
from pykafka_client.protocol.messages import ProduceRequest
from pykafka_client.protocol.records import _native
from pykafka_client.protocol.records.builder import MemoryRecordsBuilder

pytestmark = pytest.mark.skipif(_native.kernel is None, reason="the compiled record kernel is off")

METRICS = ("kafka_server_BrokerTopicMetrics_BytesIn_total", "kafka_server_BrokerTopicMetrics_MessagesIn_total",
           "kafka_server_BrokerTopicMetrics_FailedProduceRequests_total")


class Pair:
    """Two single brokers: ``brokers[0]`` with the compiled appender, ``brokers[1]`` the reference (none)."""

    def __init__(self) -> None:
        self.brokers = [MiniBroker(), MiniBroker()]
        self.sent: list[list[Any]] = [[], []]
        self.completed: list[list[object]] = [[], []]
        for i, broker in enumerate(self.brokers):
            broker.start()
            assert broker.apis is not None and broker.replica_manager is not None
            broker.apis.channel.send_response = self._keeper(self.sent[i])  # type: ignore[method-assign, assignment]  # kept
        assert self.rm(0).client_appender is not None
        self.rm(1).client_appender = None
        self.topics = itertools.count()

    @staticmethod
    def _keeper(sent: list[Any]) -> Callable[[Response], None]:
        """A channel's send_response that keeps the answers."""
        return sent.append

    def rm(self, i: int) -> ReplicaManager:
        rm = self.brokers[i].replica_manager
        assert rm is not None
        return rm

    def close(self) -> None:
        for broker in self.brokers:
            broker.stop()


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    p = Pair()
    yield p
    p.close()


class Watcher(DelayedOperation):
    """A delayed operation that completes at the first check after it is watched (an append to its partition)."""

    def __init__(self, log: list[object], name: object) -> None:
        super().__init__(600_000)
        self.log, self.name, self.checks = log, name, 0

    def try_complete(self) -> bool:
        self.checks += 1
        return self.checks > 2 and self.force_complete()  # (the watch's own two checks first)

    def on_complete(self) -> None:
        self.log.append(self.name)


batch_kinds = st.sampled_from(["next"] * 4 + ["retry", "gap", "zero", "bump", "none", "txn", "txn", "corrupt", "empty",
                                              "keyless", "keyless"])
partitions = st.tuples(st.sampled_from(["t"] * 6 + ["c"] * 3 + ["s", "unknown", "bad name!", "__consumer_offsets"]),
                       st.sampled_from([0, 0, 1, 2, 3, -1]), st.integers(0, 2), batch_kinds, st.integers(1, 4))
#: acks, transactional id, partitions (mostly one: the compiled call's), a delayed fetch and produce watching the first
requests = st.tuples(st.sampled_from([1, 1, 1, -1, -1, 0, 2]), st.sampled_from([None] * 6 + ["tx"]),
                     st.lists(partitions, min_size=1, max_size=1) | st.lists(partitions, min_size=1, max_size=3),
                     st.booleans())


def batch(kind: str, producer: int, state: dict[int, tuple[int, int]], count: int, stamp: int) -> bytes:
    epoch, seq = state.get(producer, (0, 0))
    if kind == "none":
        pid, epoch_, base = -1, -1, -1
    else:
        pid, epoch_, base = producer, epoch, seq
        if kind == "retry":
            base = max(0, seq - count)
        elif kind == "gap":
            base = seq + 5
        elif kind == "zero":
            base = 0
        elif kind == "bump":
            epoch_, base = epoch + 1, 0
    if kind == "empty":
        return b""
    builder = MemoryRecordsBuilder(write_limit=1 << 20, producer_id=pid, producer_epoch=epoch_, base_sequence=base,
                                   is_transactional=kind == "txn")
    for i in range(count):
        builder.append(1_700_000_000_000 + stamp + i, None if kind == "keyless" else b"k%d" % i, b"v" * (10 + i))
    data = bytes(builder.build())
    if kind == "corrupt":
        data = data[:-1] + bytes([data[-1] ^ 0xFF])
    if kind not in ("none", "corrupt", "empty", "gap", "retry") and pid >= 0:
        state[producer] = (epoch_, base + count)
    return data


def frame(acks: int, transactional_id: str | None, parts: list[tuple[str, int, bytes]], correlation_id: int,
          version: int = 11) -> bytes:
    topic_data: dict[str, list[ProduceRequest.PartitionProduceData]] = {}
    for name, index, records in parts:
        topic_data.setdefault(name, []).append(ProduceRequest.PartitionProduceData(index=index, records=records))
    body = ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=n, partition_data=p) for n, p in topic_data.items()])
    return b"".join(bytes(c) for c in headers.encode_request(body, version, correlation_id, "eq"))  # type: ignore[arg-type]


def answer(response: object) -> tuple[str, bytes]:
    return type(response).__name__, b"".join(bytes(c) for c in getattr(response, "buffers", ()))


def log_state(rm: ReplicaManager, topic: str, partition: int) -> object:
    lg = rm.log_manager.get_log(topic, partition)
    if lg is None:
        return None
    lg.flush()
    data = b"".join(Path(path).read_bytes() for path in sorted(glob.glob(os.path.join(lg.dir_path, "*")))
                    if path.endswith((".log", ".index", ".timeindex")))
    producers = sorted((pid, e.producer_epoch, e.last_seq, e.last_data_offset, e.current_txn_first_offset)
                       for pid, e in lg.producer_state.active_producers.items())
    return (lg.log_end_offset, lg.high_watermark, lg.log_start_offset, lg.last_stable_offset,
            data, producers)


def metrics(rm: ReplicaManager) -> list[int]:
    assert rm.metrics is not None
    return [rm.metrics.counter(name).value for name in METRICS]


Op = tuple[int, str | None, list[tuple[str, int, int, str, int]], bool]


def run_both(pair: Pair, ops: list[Op], version: int = 11,
             prepare: Callable[[ReplicaManager, str], None] | None = None) -> None:
    """``ops`` on both brokers (requests at ``version``), on topics of their own (``prepare``: called with each
    broker's replica manager and the topic ``t`` after the warm-up): the same answers and completions after each, the
    same logs, producers and metrics at the end."""
    n = next(pair.topics)
    names = {"t": f"t{n}", "c": f"c{n}", "s": f"s{n}"}
    for i in range(2):
        pair.rm(i).create_topic(f"t{n}", 3, {})
        pair.rm(i).create_topic(f"c{n}", 1, {"cleanup.policy": "compact"})
        pair.rm(i).create_topic(f"s{n}", 1, {"max.message.bytes": "150"})
    states: dict[int, tuple[int, int]] = {}
    # first one append to each topic (by the reference: a topic's name is checked at its first append), so that most
    # of the requests below are ones the compiled call takes or declines on their own merits
    warm_up: list[Op] = [(1, None, [(t, p, 3, "next", 1)], False) for t, p in (("t", 0), ("c", 0), ("s", 0))]
    for step, (acks, transactional_id, parts, watch) in enumerate([*warm_up, *ops]):
        if step == len(warm_up) and prepare is not None:
            for i in range(2):
                prepare(pair.rm(i), names["t"])
        built = [(names.get(t, t), p, batch(kind, 1000 * n + producer, states, count, step))
                 for t, p, producer, kind, count in parts]
        data = frame(acks, transactional_id, built, step, version)
        before = [len(s) for s in pair.sent]
        for i in range(2):
            broker = pair.brokers[i]
            assert broker.apis is not None
            if watch:
                key = TopicPartitionOperationKey(built[0][0], built[0][1])
                purgatories: list[DelayedOperationPurgatory[Any]] = [pair.rm(i).fetch_purgatory,
                                                                     pair.rm(i).produce_purgatory]
                for purgatory in purgatories:
                    purgatory.try_complete_else_watch(Watcher(pair.completed[i], (step, purgatory.purgatory_name)),
                                                      [key])
            request: Request = broker.apis.parse_request(0, "c", "127.0.0.1", "PLAINTEXT",
                                                         memoryview(bytearray(data))[4:], 0)
            broker.apis.handle(request)
        got = [[answer(r) for r in pair.sent[i][before[i]:]] for i in range(2)]
        assert got[0] == got[1], (step, acks, transactional_id, parts)
        assert pair.completed[0] == pair.completed[1]
    for topic, count in ((names["t"], 3), (names["c"], 1), (names["s"], 1)):
        for p in range(count):
            assert log_state(pair.rm(0), topic, p) == log_state(pair.rm(1), topic, p), (topic, p)
    assert metrics(pair.rm(0)) == metrics(pair.rm(1))


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(requests, min_size=1, max_size=12), version=st.integers(3, 11))
def test_the_compiled_append_answers_and_appends_as_the_reference(pair: Pair, ops: list[Op], version: int) -> None:
    run_both(pair, ops, version)


def one(topic: str, kind: str, acks: int = 1, partition: int = 0, transactional_id: str | None = None,
        watch: bool = False) -> Op:
    return acks, transactional_id, [(topic, partition, 0, kind, 2)], watch


#: each thing the compiled call takes or declines, after a common append of the same producer
SCENARIOS: dict[str, list[Op]] = {
    "next batches": [one("t", "next"), one("t", "next", acks=-1), one("t", "next")],
    "watched partition": [one("t", "next", watch=True), one("t", "next", acks=-1, watch=True)],
    "keyless on a compacted topic": [one("c", "next"), one("c", "keyless"), one("c", "next")],
    "transactional without a transactional id": [one("t", "next"), one("t", "txn"), one("t", "next")],
    "transactional with one": [one("t", "txn", transactional_id="tx")],
    "internal topic": [one("t", "next"), one("__consumer_offsets", "next")],
    "invalid name": [one("bad name!", "next")],
    "unknown topic": [one("unknown", "next")],
    "partition out of range": [one("t", "next", partition=3), one("t", "next", partition=-1)],
    "acks 0, 2": [one("t", "next", acks=0), one("t", "next", acks=2), one("t", "gap", acks=0)],
    "retry": [one("t", "next"), one("t", "retry"), one("t", "retry", acks=-1)],
    "sequence gap": [one("t", "next"), one("t", "gap"), one("t", "gap", acks=-1)],
    "epoch bump, sequence 0": [one("t", "next"), one("t", "bump"), one("t", "zero")],
    "no producer": [one("t", "none"), one("t", "none", acks=-1)],
    "corrupt, empty": [one("t", "corrupt"), one("t", "empty"), one("t", "corrupt", acks=-1)],
    "over max.message.bytes": [one("s", "next"), one("s", "next", acks=-1), one("s", "none")],
    "two partitions, duplicates": [(1, None, [("t", 0, 0, "next", 1), ("t", 1, 0, "next", 1)], False),
                                   (1, None, [("t", 0, 1, "next", 1), ("t", 0, 2, "next", 1)], False)],
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_case_answers_as_the_reference(pair: Pair, name: str) -> None:
    run_both(pair, SCENARIOS[name])


@pytest.mark.parametrize("version", range(3, 12))
def test_each_version_answers_as_the_reference(pair: Pair, version: int) -> None:
    run_both(pair, SCENARIOS["next batches"] + SCENARIOS["no producer"] + SCENARIOS["corrupt, empty"], version)


def test_a_log_with_a_leader_epoch_cache_answers_as_the_reference(pair: Pair) -> None:
    # the log lends no parts (Log.client_append_parts is None): the compiled call appends through Log.append
    def with_cache(rm: ReplicaManager, topic: str) -> None:
        lg = rm.log_manager.get_log(topic, 0)
        assert lg is not None
        lg.leader_epoch_cache()
        assert lg.client_append_parts() is None

    run_both(pair, SCENARIOS["next batches"] + SCENARIOS["retry"] + SCENARIOS["sequence gap"], prepare=with_cache)


def test_a_log_past_its_start_answers_as_the_reference(pair: Pair) -> None:
    # a log start offset (DeleteRecords) other than the recovery point: each read under the lock, answered (v5+)
    def delete_records(rm: ReplicaManager, topic: str) -> None:
        lg = rm.log_manager.get_log(topic, 0)
        assert lg is not None
        assert lg.delete_records_before(1) == 1 != lg.recovery_point

    run_both(pair, SCENARIOS["next batches"] + SCENARIOS["no producer"], prepare=delete_records)


def test_a_fault_injector_drops_the_answer_as_the_reference(pair: Pair) -> None:
    # the appender's ready frame is not sent where a (test-only) fault injector may drop the answer
    injectors = [FaultInjector(), FaultInjector()]
    contexts = [broker.context for broker in pair.brokers]
    for context, faults in zip(contexts, injectors, strict=True):
        assert context is not None
        faults.drop_produce_responses(2)
        context.faults = faults
    try:
        run_both(pair, SCENARIOS["next batches"] + SCENARIOS["retry"])
    finally:
        for context in contexts:
            assert context is not None
            context.faults = None
    assert [faults.dropped_produce_responses for faults in injectors] == [2, 2]


def test_the_common_request_appends_through_the_log_end(pair: Pair) -> None:
    # past the first append of a topic: no Log.append (the end's append under the lent lock) and no response object
    # (the appender's frame, sent with KafkaApis.send_frame)
    rm = pair.rm(0)
    n = next(pair.topics)
    rm.create_topic(f"t{n}", 1, {})
    calls: list[str] = []
    originals = (Log.append, produce_api._build)
    states: dict[int, tuple[int, int]] = {}
    broker = pair.brokers[0]
    assert broker.apis is not None
    sent = pair.sent[0]
    try:
        def counted_append(*a: Any, **k: Any) -> Any:
            calls.append("append")
            return originals[0](*a, **k)

        def counted_build(*a: Any, **k: Any) -> Any:
            calls.append("build")
            return originals[1](*a, **k)

        Log.append = counted_append  # type: ignore[method-assign]  # counted, then the real one
        produce_api._build = counted_build
        for step in range(4):
            data = frame(-1 if step == 3 else 1, None, [(f"t{n}", 0, batch("next", 9, states, 3, step))], step)
            before = len(sent)
            broker.apis.handle(broker.apis.parse_request(0, "c", "127.0.0.1", "PLAINTEXT",
                                                         memoryview(bytearray(data))[4:], 0))
            assert len(sent) == before + 1 and sent[-1].body is None  # the frame alone
    finally:
        Log.append, produce_api._build = originals  # type: ignore[method-assign]
    assert calls == ["append"]  # the topic's first append (its name checked by the reference)
    lg = rm.log_manager.get_log(f"t{n}", 0)
    assert lg is not None and lg.log_end_offset == 12 == lg.high_watermark


def test_the_common_request_takes_the_compiled_call(pair: Pair) -> None:
    # the common request does not reach the reference's replica manager append (nor, below it, _append_to_local_log)
    rm = pair.rm(0)
    n = next(pair.topics)
    rm.create_topic(f"t{n}", 1, {})
    calls: list[object] = []
    original = ReplicaManager.append_records
    states: dict[int, tuple[int, int]] = {}
    try:
        def counted(*a: Any, **k: Any) -> Any:
            calls.append(a)
            return original(*a, **k)

        ReplicaManager.append_records = counted  # type: ignore[method-assign]  # counted, then the real one
        broker = pair.brokers[0]
        assert broker.apis is not None
        for step in range(3):  # the first append of a topic takes the reference (its name checked), then the call
            data = frame(1, None, [(f"t{n}", 0, batch("next", 7, states, 3, step))], step)
            broker.apis.handle(broker.apis.parse_request(0, "c", "127.0.0.1", "PLAINTEXT",
                                                         memoryview(bytearray(data))[4:], 0))
    finally:
        ReplicaManager.append_records = original  # type: ignore[method-assign]
    assert len(calls) == 1
    lg = rm.log_manager.get_log(f"t{n}", 0)
    assert lg is not None and lg.log_end_offset == 9 == lg.high_watermark


def test_the_appender_refers_to_nothing_that_refers_to_its_replica_manager(pair: Pair) -> None:
    # lent maps and purgatories, no bound method nor the manager itself (each append is passed it): no cycle through it
    rm = pair.rm(0)
    lent = gc.get_referents(rm.client_appender)
    assert lent and rm not in lent
    assert not [o for o in lent if getattr(o, "__self__", None) is rm]
    assert rm.metadata_cache.topics_by_name in lent and rm.log_manager.logs_by_partition in lent
