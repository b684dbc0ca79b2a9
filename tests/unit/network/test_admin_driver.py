"""The generic admin driver's stages (issue 23; Java ``AdminApiDriver``): the lookups (partition leaders,
transaction coordinators, every broker), per-key fulfilment (only the keys of a stale target are looked up
again, a loading coordinator is asked again, an error fails only its key) and the version-dependent requests.

Two levels: :func:`drive` with a scripted context and handler (the stages alone, on MockTime), and the
AdminClient on a MockSelector and MockTime (the requests on the wire)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pykafka_client.admin import ElectionType, IsolationLevel, OffsetSpec, TransactionState
from pykafka_client.admin.api_driver import drive
from pykafka_client.admin.api_handler import ApiResult, LookupResult, Target, TargetFinder
from pykafka_client.admin.lookups import TRANSACTION_COORDINATORS
from pykafka_client.errors import (
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    KafkaTimeoutError,
    NotCoordinatorError,
    TransactionalIdAuthorizationError,
    TransactionalIdNotFoundError,
    UnknownTopicOrPartitionError,
    for_code,
)
from pykafka_client.network.metadata import Metadata
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DescribeGroupsResponse,
    DescribeTransactionsResponse,
    ElectLeadersResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    ListOffsetsResponse,
    ListTransactionsResponse,
)
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.time import MockTime, Timer
from tests.doubles.mock_selector import SentRequest
from tests.doubles.responses import api_versions_response, metadata_response
from tests.unit.network.test_admin_client import BROKERS, Env

NOT_LEADER, NOT_COORDINATOR, LOADING = 6, 16, 14
TXN_AUTH_FAILED = TransactionalIdAuthorizationError.code
UNKNOWN_SERVER_ERROR = -1

# --- the stages alone: drive() with a scripted context and handler --------------------------------------


class ScriptedContext:
    """A DriverContext whose requests are answered by ``answer(node id, keys)`` (no network); backoff
    advances the MockTime by ``backoff_ms``."""

    def __init__(self, answer: Callable[[int, list[Any]], Any], backoff_ms: int = 100) -> None:
        self.time = MockTime()
        self.answer = answer
        self.backoff_ms = backoff_ms
        self.sent: list[tuple[int, Any]] = []
        self.backoffs = 0

    @property
    def metadata(self) -> Metadata:
        raise AssertionError("the scripted lookups do not read metadata")

    def least_loaded(self) -> Node | None:
        return Node(0, "h", 1)

    def controller_or_any(self) -> Node | None:
        return Node(0, "h", 1)

    def broker_target(self, broker_id: int) -> Target:
        return lambda: Node(broker_id, "h", 1)

    def refresh_metadata(self, timer: Timer, what: str) -> None:
        raise AssertionError("the scripted lookups do not refresh metadata")

    def send(self, api_key: ApiKey, build: Callable[[int], Any], target: Target, timer: Timer, *,
             fallback: tuple[ApiKey, Callable[[int], Any]] | None = None,
             rediscover: bool = False) -> tuple[Node, Any]:
        node = target()
        assert node is not None
        keys = build(0)
        self.sent.append((node.id, keys))
        return node, self.answer(node.id, keys)

    def backoff(self, timer: Timer) -> None:
        self.backoffs += 1
        self.time.sleep(min(self.backoff_ms, timer.remaining_ms()))
        timer.update()

    def expired(self, timer: Timer, what: str) -> KafkaTimeoutError:
        return KafkaTimeoutError(f"timed out after {timer.elapsed_ms()} ms {what}")


@dataclass
class ScriptedLookup:
    """Maps each key to ``where[key]`` (a broker id, an exception: fails the key, or None: not found yet);
    ``where`` may be changed between rounds. Records each round's keys and ``stale`` flag."""

    where: dict[str, int | BaseException | None]
    rounds: list[tuple[list[str], bool]] = field(default_factory=list)
    description: str = "scripted target"
    targets_move = False

    def lookup(self, finder: TargetFinder, keys: Sequence[str], timer: Timer, stale: bool) -> list[LookupResult[str]]:
        self.rounds.append((list(keys), stale))
        result: LookupResult[str] = LookupResult()
        by_broker: dict[int, list[str]] = {}
        for key in keys:
            found = self.where[key]
            if isinstance(found, BaseException):
                result.failed[key] = found
            elif found is None:
                result.unmapped[key] = None
            else:
                by_broker.setdefault(found, []).append(key)
        result.mapped = [(finder.broker_target(b), ks) for b, ks in by_broker.items()]
        return [result]


@dataclass
class ScriptedHandler:
    """The request is the list of keys; ``outcome(broker, key)`` says what the broker answers about a key:
    a value, an exception (fails it), ``"moved"`` (unmapped) or ``"loading"`` (retry)."""

    lookup: ScriptedLookup
    outcome: Callable[[int, str], Any]
    api_key = ApiKey.DESCRIBE_TRANSACTIONS

    def build_request(self, version: int, keys: list[str]) -> list[str]:
        return list(keys)

    def handle_response(self, node: Node, keys: list[str], response: Any) -> ApiResult[str, str]:
        result: ApiResult[str, str] = ApiResult()
        for key in keys:
            got = self.outcome(node.id, key)
            if got == "moved":
                result.unmapped[key] = NotCoordinatorError(key)
            elif got == "loading":
                result.retry[key] = None
            elif isinstance(got, BaseException):
                result.fail(key, got)
            else:
                result.completed[key] = got
        return result


def _drive(handler: ScriptedHandler, keys: list[str], ctx: ScriptedContext, timeout_ms: int = 5000
           ) -> ApiResult[str, str]:
    return drive(ctx, handler, keys, ctx.time.timer(timeout_ms))


def test_one_request_per_broker_and_only_the_keys_of_a_stale_target_are_looked_up_again() -> None:
    lookup = ScriptedLookup({"a": 0, "b": 0, "c": 1})
    moved_once: set[str] = set()

    def outcome(broker: int, key: str) -> Any:
        if key == "b" and broker == 0:
            lookup.where["b"] = 1  # the key moved to broker 1
            moved_once.add(key)
            return "moved"
        return f"{key}@{broker}"

    ctx = ScriptedContext(lambda b, keys: keys)
    result = _drive(ScriptedHandler(lookup, outcome), ["a", "b", "c"], ctx)
    assert result.completed == {"a": "a@0", "c": "c@1", "b": "b@1"}
    assert ctx.sent == [(0, ["a", "b"]), (1, ["c"]), (1, ["b"])]
    assert lookup.rounds == [(["a", "b", "c"], False), (["b"], True)]
    assert ctx.backoffs == 1


def test_a_key_without_a_target_yet_is_looked_up_again_after_a_backoff_while_the_others_are_sent() -> None:
    lookup = ScriptedLookup({"a": 0, "b": None})
    ctx = ScriptedContext(lambda b, keys: keys)

    def outcome(broker: int, key: str) -> Any:
        lookup.where["b"] = 1  # b's target is known once a has been asked
        return f"{key}@{broker}"

    result = _drive(ScriptedHandler(lookup, outcome), ["a", "b"], ctx)
    assert ctx.sent == [(0, ["a"]), (1, ["b"])]
    assert result.completed == {"a": "a@0", "b": "b@1"}
    assert lookup.rounds == [(["a", "b"], False), (["b"], True)]


def test_a_loading_answer_asks_the_same_broker_again_without_a_new_lookup() -> None:
    lookup = ScriptedLookup({"a": 1, "b": 1})
    answers = iter(["loading", "a-value"])
    ctx = ScriptedContext(lambda b, keys: keys)
    result = _drive(ScriptedHandler(lookup, lambda broker, key: next(answers) if key == "a" else "b-value"),
                    ["a", "b"], ctx)
    assert result.completed == {"a": "a-value", "b": "b-value"}
    assert ctx.sent == [(1, ["a", "b"]), (1, ["a"])]
    assert len(lookup.rounds) == 1 and ctx.backoffs == 1


def test_an_error_fails_only_its_key_in_the_lookup_and_in_the_answer() -> None:
    lookup = ScriptedLookup({"a": 0, "b": TransactionalIdAuthorizationError("b"), "c": 0})
    ctx = ScriptedContext(lambda b, keys: keys)
    result = _drive(ScriptedHandler(lookup, lambda broker, key: TransactionalIdNotFoundError(key) if key == "c"
                                    else "ok"), ["a", "b", "c"], ctx)
    assert result.completed == {"a": "ok"}
    assert list(result.failed) == ["b", "c"]
    assert isinstance(result.failed["b"], TransactionalIdAuthorizationError)
    assert isinstance(result.failed["c"], TransactionalIdNotFoundError)
    assert ctx.sent == [(0, ["a", "c"])]
    assert len(lookup.rounds) == 1


def test_keys_still_pending_at_the_deadline_fail_with_a_timeout_naming_the_api_key_broker_and_last_error() -> None:
    lookup = ScriptedLookup({"a": 0, "b": None})
    ctx = ScriptedContext(lambda b, keys: keys, backoff_ms=400)
    result = _drive(ScriptedHandler(lookup, lambda broker, key: "moved"), ["a", "b"], ctx, timeout_ms=1000)
    a, b = result.failed["a"], result.failed["b"]
    assert isinstance(a, KafkaTimeoutError) and isinstance(a.__cause__, NotCoordinatorError)
    assert "DescribeTransactions for 'a' (scripted target last tried: node 0; last error: NotCoordinatorError" in str(a)
    assert isinstance(b, KafkaTimeoutError) and b.__cause__ is None
    assert "DescribeTransactions for 'b' (no scripted target reached; no answer)" in str(b)
    assert ctx.backoffs == 3  # 400 + 400 + 200 ms: the timer's 1000 ms


# --- the lookups and fulfilment on the wire: the AdminClient on a MockSelector ----------------------------


def _coordinators(where: Callable[[str], tuple[int, int]]) -> Callable[[SentRequest], FindCoordinatorResponse]:
    """A FindCoordinator responder: ``where(key)`` is (error code, node id), in the request's version's shape."""

    def answer(r: SentRequest) -> FindCoordinatorResponse:
        body: FindCoordinatorRequest = r.body
        if r.api_version >= 4:
            found = {k: where(k) for k in body.coordinator_keys}
            return FindCoordinatorResponse(coordinators=[
                FindCoordinatorResponse.Coordinator(key=k, node_id=node_id, host="127.0.0.1", port=9092,
                                                    error_code=code)
                for k, (code, node_id) in found.items()])
        code, node_id = where(body.key)
        return FindCoordinatorResponse(error_code=code, node_id=node_id, host="127.0.0.1", port=9092)

    return answer


def _described(codes: Callable[[str, str], int]) -> Callable[[SentRequest], DescribeTransactionsResponse]:
    """A DescribeTransactions responder: ``codes(destination, id)`` is the error code of each id."""

    def answer(r: SentRequest) -> DescribeTransactionsResponse:
        return DescribeTransactionsResponse(transaction_states=[
            DescribeTransactionsResponse.TransactionState(
                error_code=codes(r.destination, tid), transactional_id=tid, transaction_state="Empty",
                transaction_timeout_ms=60_000, transaction_start_time_ms=-1, producer_id=7, producer_epoch=0)
            for tid in r.body.transactional_ids])

    return answer


def _asked_coordinators(env: Env) -> list[list[str]]:
    return [r.body.coordinator_keys if r.api_version >= 4 else [r.body.key]
            for r in env.sent(ApiKey.FIND_COORDINATOR)]


def _asked_descriptions(env: Env) -> list[tuple[str, list[str]]]:
    return [(r.destination, list(r.body.transactional_ids)) for r in env.sent(ApiKey.DESCRIBE_TRANSACTIONS)]


def test_transaction_coordinators_are_found_in_one_batched_find_coordinator_and_asked_once_each() -> None:
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _coordinators(lambda k: (0, 0 if k in ("a", "c") else 1))
    env.responders[ApiKey.DESCRIBE_TRANSACTIONS] = _described(lambda node, tid: 0)
    out = env.admin.describe_transactions(["a", "b", "c"], timeout=5)
    assert {tid: d.coordinator_id for tid, d in out.items()} == {"a": 0, "b": 1, "c": 0}
    assert _asked_coordinators(env) == [["a", "b", "c"]]
    assert all(r.body.key_type == 1 for r in env.sent(ApiKey.FIND_COORDINATOR))  # TRANSACTION
    assert _asked_descriptions(env) == [("0", ["a", "c"]), ("1", ["b"])]
    env.admin.close()


def test_a_broker_older_than_find_coordinator_v4_is_asked_one_key_per_request() -> None:
    env = Env(api_versions=api_versions_response({ApiKey.FIND_COORDINATOR: (0, 3)}))
    env.responders[ApiKey.FIND_COORDINATOR] = _coordinators(lambda k: (0, 0 if k in ("a", "c") else 1))
    env.responders[ApiKey.DESCRIBE_TRANSACTIONS] = _described(lambda node, tid: 0)
    out = env.admin.describe_transactions(["a", "b", "c"], timeout=5)
    assert set(out) == {"a", "b", "c"}
    assert _asked_coordinators(env) == [["a"], ["b"], ["c"]]
    assert {r.api_version for r in env.sent(ApiKey.FIND_COORDINATOR)} == {3}
    assert _asked_descriptions(env) == [("0", ["a", "c"]), ("1", ["b"])]  # still one request per coordinator
    env.admin.close()


def test_not_coordinator_for_one_transactional_id_looks_up_only_that_id_again() -> None:
    env = Env()
    moved: list[str] = []

    def codes(node: str, tid: str) -> int:
        if tid == "b" and node == "0":
            moved.append(tid)
            return NOT_COORDINATOR
        return 0

    env.responders[ApiKey.FIND_COORDINATOR] = _coordinators(lambda k: (0, 1 if moved else 0))
    env.responders[ApiKey.DESCRIBE_TRANSACTIONS] = _described(codes)
    out = env.admin.describe_transactions(["a", "b"], timeout=5)
    assert {tid: d.coordinator_id for tid, d in out.items()} == {"a": 0, "b": 1}
    assert _asked_coordinators(env) == [["a", "b"], ["b"]]
    assert _asked_descriptions(env) == [("0", ["a", "b"]), ("1", ["b"])]
    env.admin.close()


def test_a_loading_coordinator_is_asked_again_without_finding_it_again() -> None:
    env = Env()
    answers = iter([LOADING, 0])
    env.responders[ApiKey.FIND_COORDINATOR] = _coordinators(lambda k: (0, 0))
    env.responders[ApiKey.DESCRIBE_TRANSACTIONS] = _described(lambda node, tid: next(answers))
    assert env.admin.describe_transactions(["a"], timeout=5)["a"].state is TransactionState.EMPTY
    assert _asked_coordinators(env) == [["a"]]
    assert _asked_descriptions(env) == [("0", ["a"]), ("0", ["a"])]
    env.admin.close()


def test_a_fatal_coordinator_lookup_error_fails_only_its_id_the_others_are_still_described() -> None:
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _coordinators(lambda k: (TXN_AUTH_FAILED, -1) if k == "a" else (0, 1))
    env.responders[ApiKey.DESCRIBE_TRANSACTIONS] = _described(lambda node, tid: 0)
    with pytest.raises(TransactionalIdAuthorizationError, match="'a'"):
        env.admin.describe_transactions(["a", "b"], timeout=5)
    assert _asked_descriptions(env) == [("1", ["b"])]
    env.admin.close()


def test_a_retriable_coordinator_lookup_error_is_retried_until_the_coordinator_is_found() -> None:
    env = Env()
    lookups = iter([(CoordinatorNotAvailableError.code, -1), (0, 1)])
    env.responders[ApiKey.FIND_COORDINATOR] = _coordinators(lambda k: next(lookups))
    env.responders[ApiKey.DESCRIBE_TRANSACTIONS] = _described(lambda node, tid: 0)
    assert env.admin.describe_transactions(["a"], timeout=5)["a"].coordinator_id == 1
    assert _asked_coordinators(env) == [["a"], ["a"]]
    env.admin.close()


def _offsets(codes: Callable[[str, TopicPartition], int]) -> Callable[[SentRequest], ListOffsetsResponse]:
    """A ListOffsets responder: ``codes(destination, partition)`` is each partition's error code; offset 40 + index."""

    def answer(r: SentRequest) -> ListOffsetsResponse:
        return ListOffsetsResponse(topics=[
            ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=[
                ListOffsetsResponse.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=codes(r.destination, TopicPartition(t.name, p.partition_index)),
                    offset=40 + p.partition_index, timestamp=-1, leader_epoch=0 if r.api_version >= 4 else -1)
                for p in t.partitions])
            for t in r.body.topics])

    return answer


def _asked_offsets(env: Env) -> list[tuple[str, list[tuple[str, int]]]]:
    return [(r.destination, [(t.name, p.partition_index) for t in r.body.topics for p in t.partitions])
            for r in env.sent(ApiKey.LIST_OFFSETS)]


def test_a_partition_without_a_leader_waits_while_the_partitions_with_one_are_asked() -> None:
    env = Env()
    refreshes: list[int] = []

    def metadata(r: SentRequest) -> Any:
        refreshes.append(1)
        leaderless = {("t", 1): -1} if len(refreshes) < 3 else {}  # the election ends at the third refresh
        return metadata_response(BROKERS, {"t": 2}, leaders=leaderless)

    env.responders[ApiKey.METADATA] = metadata
    env.responders[ApiKey.LIST_OFFSETS] = _offsets(lambda node, tp: 0)
    out = env.admin.list_offsets({("t", 0): OffsetSpec.latest(), ("t", 1): OffsetSpec.latest()}, timeout=5)
    assert {tp: info.offset for tp, info in out.items()} == {("t", 0): 40, ("t", 1): 41}
    assert _asked_offsets(env) == [("0", [("t", 0)]), ("1", [("t", 1)])]
    # t-0 was asked before the metadata named t-1's leader
    first_offsets = env.selector.sent_requests.index(env.sent(ApiKey.LIST_OFFSETS)[0])
    named = [i for i, r in enumerate(env.selector.sent_requests) if r.api_key == ApiKey.METADATA][2]
    assert first_offsets < named
    env.admin.close()


def test_not_leader_on_one_partition_looks_up_only_that_partition_again() -> None:
    env = Env()
    moved: list[TopicPartition] = []

    def metadata(r: SentRequest) -> Any:
        return metadata_response(BROKERS, {"t": 3}, leaders={("t", 0): 0, ("t", 1): 0, ("t", 2): 1 if moved else 0})

    def codes(node: str, tp: TopicPartition) -> int:
        if tp == ("t", 2) and node == "0":
            moved.append(tp)
            return NOT_LEADER
        return 0

    env.responders[ApiKey.METADATA] = metadata
    env.responders[ApiKey.LIST_OFFSETS] = _offsets(codes)
    out = env.admin.list_offsets({TopicPartition("t", p): OffsetSpec.latest() for p in range(3)}, timeout=5)
    assert {tp[1]: info.offset for tp, info in out.items()} == {0: 40, 1: 41, 2: 42}
    assert _asked_offsets(env) == [("0", [("t", 0), ("t", 1), ("t", 2)]), ("1", [("t", 2)])]
    env.admin.close()


def test_a_fatal_partition_error_fails_only_its_partition_the_other_leaders_are_still_asked() -> None:
    env = Env()
    env.responders[ApiKey.LIST_OFFSETS] = _offsets(lambda node, tp: UNKNOWN_SERVER_ERROR if tp == ("t", 0) else 0)
    with pytest.raises(for_code(UNKNOWN_SERVER_ERROR), match="t-0"):
        env.admin.list_offsets({("t", 0): OffsetSpec.latest(), ("t", 1): OffsetSpec.latest()}, timeout=5)
    assert _asked_offsets(env) == [("0", [("t", 0)]), ("1", [("t", 1)])]
    env.admin.close()


def test_an_absent_partition_fails_its_key_after_one_refresh_the_others_are_still_asked() -> None:
    env = Env()
    env.responders[ApiKey.LIST_OFFSETS] = _offsets(lambda node, tp: 0)
    with pytest.raises(UnknownTopicOrPartitionError, match="t-7"):
        env.admin.list_offsets({("t", 0): OffsetSpec.latest(), ("t", 7): OffsetSpec.latest()}, timeout=5)
    assert _asked_offsets(env) == [("0", [("t", 0)])]
    env.admin.close()


def _metadata_with_epoch(leader_epoch: int) -> Callable[[SentRequest], object]:
    return lambda r: metadata_response(BROKERS, {"t": 1}, leader_epoch=leader_epoch)


def test_list_offsets_builds_the_request_of_the_negotiated_version() -> None:
    # (epoch 0, a partition's first leader, is sent as 0: -1 would switch the broker's fencing check off)
    for max_version, isolation, seen, epoch in ((1, 0, 5, -1), (3, 1, 5, -1), (9, 1, 5, 5), (9, 1, 0, 0)):
        env = Env(api_versions=api_versions_response({ApiKey.LIST_OFFSETS: (0, max_version)}))
        env.responders[ApiKey.METADATA] = _metadata_with_epoch(seen)
        env.responders[ApiKey.LIST_OFFSETS] = _offsets(lambda node, tp: 0)
        env.admin.list_offsets({("t", 0): OffsetSpec.latest()}, timeout=5, isolation_level=IsolationLevel.READ_COMMITTED)
        (sent,) = env.sent(ApiKey.LIST_OFFSETS)
        assert sent.api_version == max_version
        assert sent.body.isolation_level == isolation
        assert sent.body.topics[0].partitions[0].current_leader_epoch == epoch
        env.admin.close()


def test_list_transactions_asks_every_broker_and_merges_their_answers() -> None:
    env = Env()
    env.responders[ApiKey.LIST_TRANSACTIONS] = lambda r: ListTransactionsResponse(transaction_states=[
        ListTransactionsResponse.TransactionState(transactional_id=f"id-{r.destination}", producer_id=int(r.destination),
                                                  transaction_state="Ongoing")])
    listed = env.admin.list_transactions(timeout=5)
    assert [(t.transactional_id, t.producer_id, t.state) for t in listed] == [
        ("id-0", 0, TransactionState.ONGOING), ("id-1", 1, TransactionState.ONGOING)]
    assert sorted(r.destination for r in env.sent(ApiKey.LIST_TRANSACTIONS)) == ["0", "1"]
    env.admin.close()


def test_a_failing_broker_fails_list_transactions_after_every_broker_was_asked() -> None:
    env = Env()
    env.responders[ApiKey.LIST_TRANSACTIONS] = lambda r: ListTransactionsResponse(
        error_code=UNKNOWN_SERVER_ERROR if r.destination == "0" else 0)
    with pytest.raises(for_code(UNKNOWN_SERVER_ERROR), match="broker 0"):
        env.admin.list_transactions(timeout=5)
    assert sorted(r.destination for r in env.sent(ApiKey.LIST_TRANSACTIONS)) == ["0", "1"]
    env.admin.close()


def test_the_transaction_coordinator_lookup_builds_and_reads_by_version() -> None:
    asked: list[tuple[int, list[str]]] = []
    batched = TRANSACTION_COORDINATORS.build_request(4, ["a", "b"], asked)
    assert (batched.key_type, batched.coordinator_keys) == (1, ["a", "b"])
    single = TRANSACTION_COORDINATORS.build_request(3, ["a", "b"], asked)
    assert (single.key_type, single.key, single.coordinator_keys) == (1, "a", [])
    assert asked == [(4, ["a", "b"]), (3, ["a"])]
    result: LookupResult[str] = LookupResult()
    by_node: dict[int, list[str]] = {}
    # a v4 answer that leaves out a key: that key is looked up again (not read from the v3 top-level fields)
    TRANSACTION_COORDINATORS.handle_response(4, ["a", "b"], FindCoordinatorResponse(coordinators=[
        FindCoordinatorResponse.Coordinator(key="a", node_id=1)]), result, by_node)
    assert by_node == {1: ["a"]} and result.unmapped == {"b": None}
    TRANSACTION_COORDINATORS.handle_response(3, ["c"], FindCoordinatorResponse(node_id=0), result, by_node)
    assert by_node == {1: ["a"], 0: ["c"]}


def test_group_coordinators_share_the_stages_loading_retries_in_place_and_a_fatal_lookup_fails_one_group() -> None:
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _coordinators(
        lambda k: (GroupAuthorizationFailedError.code, -1) if k == "secret" else (0, 1))
    answers = {"g": [LOADING, 0]}

    def described(r: SentRequest) -> DescribeGroupsResponse:
        return DescribeGroupsResponse(groups=[DescribeGroupsResponse.DescribedGroup(
            group_id=g, error_code=answers[g].pop(0), group_state="Empty") for g in r.body.groups])

    env.responders[ApiKey.DESCRIBE_GROUPS] = described
    with pytest.raises(GroupAuthorizationFailedError, match="'secret'"):
        env.admin.describe_consumer_groups(["secret", "g"], timeout=5)
    # each group looked up just before its request: ConsumerGroupDescribe first (the broker says "g" is not a
    # consumer group), then DescribeGroups for "g" (Java's describeConsumerGroups)
    assert _asked_coordinators(env) == [["secret"], ["g"], ["g"]]
    assert [(r.destination, r.body.groups) for r in env.sent(ApiKey.DESCRIBE_GROUPS)] == [("1", ["g"]), ("1", ["g"])]
    env.admin.close()


def test_a_controller_answering_not_controller_is_looked_up_again_and_asked_again() -> None:
    """Java's handleNotControllerError: ElectLeaders (and the reassignment calls) answered NOT_CONTROLLER at the
    top level refresh the metadata and resend, instead of failing the call."""
    env = Env()
    answers = iter([41, 0])

    def elect(req: SentRequest) -> ElectLeadersResponse:
        return ElectLeadersResponse(throttle_time_ms=0, error_code=next(answers), replica_election_results=[
            ElectLeadersResponse.ReplicaElectionResult(topic="t", partition_result=[
                ElectLeadersResponse.PartitionResult(partition_id=0, error_code=0, error_message=None)])])

    env.responders[ApiKey.ELECT_LEADERS] = elect
    assert env.admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("t", 0)], timeout=5) == {
        TopicPartition("t", 0): None}
    assert len(env.sent(ApiKey.ELECT_LEADERS)) == 2
    env.admin.close()
