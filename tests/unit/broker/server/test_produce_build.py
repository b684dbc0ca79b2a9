"""The Produce handler builds its response objects without their Python __init__ (``positional_new``): the body equals,
field for field and class for class, the one the generated classes' constructors build, whatever the partitions'
results, at every version; a partition's PartitionResponse likewise."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.server.apis.produce import _build
from mini_broker.server.replica_manager import PartitionResponse, _new_partition_response
from pykafka_client.protocol.messages import ProduceResponse
from pykafka_client.structs import TopicPartition

int64 = st.integers(-(2**63), 2**63 - 1)
results = st.builds(PartitionResponse, error_code=st.sampled_from([0, 0, 2, 10, 87]), base_offset=int64,
                    log_append_time_ms=int64, log_start_offset=int64,
                    record_errors=st.lists(st.tuples(st.integers(0, 9), st.none() | st.text(max_size=5)), max_size=2),
                    error_message=st.none() | st.text(max_size=8))


def reference_body(version: int, order: list[TopicPartition], res: dict[TopicPartition, PartitionResponse]
               ) -> ProduceResponse:
    """The body as the generated classes' constructors build it."""
    topics: dict[str, list[ProduceResponse.PartitionProduceResponse]] = {}
    with_messages = version >= 8
    for tp in order:
        r = res[tp]
        topics.setdefault(tp.topic, []).append(ProduceResponse.PartitionProduceResponse(
            index=tp.partition, error_code=r.error_code, base_offset=r.base_offset,
            log_append_time_ms=r.log_append_time_ms, log_start_offset=r.log_start_offset,
            record_errors=[ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                           for i, m in r.record_errors] if with_messages else [],
            error_message=r.error_message if with_messages else None,
            current_leader=ProduceResponse.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)))
    return ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name=n, partition_responses=ps)
                                      for n, ps in topics.items()], throttle_time_ms=0, node_endpoints=[])


def _shapes(o: Any) -> object:
    """The classes of the body's objects, nested as they are."""
    return (type(o).__name__, [(type(t).__name__, [(type(p).__name__, type(p.current_leader).__name__)
                                                   for p in t.partition_responses]) for t in o.responses])


@settings(max_examples=200, deadline=None)
@given(version=st.integers(3, 11), parts=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3), results),
                                                  min_size=1, max_size=6, unique_by=lambda x: (x[0], x[1])))
def test_the_body_is_the_constructors_body(version: int, parts: list[tuple[str, int, PartitionResponse]]) -> None:
    broker: Any = SimpleNamespace(replica_manager=SimpleNamespace(replication=SimpleNamespace(
        leader_hint=lambda tp: None)))
    order = [TopicPartition(t, p) for t, p, _ in parts]
    res = {TopicPartition(t, p): r for t, p, r in parts}
    got = _build(broker, version, order, res, "PLAINTEXT")
    expected = reference_body(version, order, res)
    assert got == expected
    assert _shapes(got) == _shapes(expected)


def test_a_partition_response_is_the_constructors() -> None:
    made = _new_partition_response(0, 5, -1, 0, [], None, 9)
    assert made == PartitionResponse(error_code=0, base_offset=5, log_append_time_ms=-1, log_start_offset=0,
                                     record_errors=[], error_message=None, last_offset=9)
    assert type(made) is PartitionResponse
