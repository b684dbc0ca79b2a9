"""The admin API table (issue 23): every AdminClient operation dispatches through ``admin/api_table.py``; each
converted API is an AdminApiHandler in its own module under ``admin/handlers/``; the driver merges answers."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from pykafka_client import AdminClient
from pykafka_client.admin import api_table
from pykafka_client.admin.api_handler import AdminApiHandler, ApiResult
from pykafka_client.errors import (
    IllegalStateError,
    LeaderNotAvailableError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteRecordsResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import MockTime
from tests.doubles.mock_selector import MockSelector, SentRequest
from tests.doubles.responses import metadata_response
from tests.unit.network.test_admin_client import BROKERS, Env

LIFECYCLE = {"close"}


def _operations() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(AdminClient).items()
            if not name.startswith("_") and inspect.isfunction(member) and name not in LIFECYCLE}


def test_the_table_names_every_operation_once() -> None:
    assert set(api_table.ADMIN_APIS) == set(_operations())
    assert not hasattr(api_table, "MULTI_STEP_APIS")  # every operation is a handler run by the generic driver


@pytest.mark.parametrize("name", sorted(api_table.ADMIN_APIS))
def test_every_handler_satisfies_the_protocol_in_a_module_of_its_own(name: str) -> None:
    handler = api_table.ADMIN_APIS[name]
    assert handler.__module__ == f"pykafka_client.admin.handlers.{name}"
    assert isinstance(handler, AdminApiHandler)  # its members are there (the signatures: mypy --strict)
    assert isinstance(handler.api_key, ApiKey)
    assert isinstance(handler.lookup.description, str) and callable(handler.lookup.lookup)
    for method in ("build_request", "handle_response", "call"):
        assert callable(getattr(handler, method)), (name, method)
    assert list(inspect.signature(handler.build_request).parameters) == ["self", "version", "keys"]
    assert list(inspect.signature(handler.handle_response).parameters) == ["self", "node", "keys", "response"]


def test_every_operation_dispatches_through_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    time = MockTime()
    admin = AdminClient({"bootstrap.servers": "127.0.0.1:9092"}, time=time, selector=MockSelector(time))
    calls: list[tuple[str, Any, tuple[Any, ...]]] = []
    for name, entry in api_table.ADMIN_APIS.items():

        def fake_call(ctx: Any, *args: Any, name: str = name) -> Any:
            calls.append((name, ctx, args))
            return f"answer of {name}"

        monkeypatch.setitem(api_table.ADMIN_APIS, name, type(f"Fake{entry.__name__}", (entry,),
                                                             {"call": staticmethod(fake_call)}))
    for name, signature in _operations().items():
        required = [p for p in list(signature.parameters.values())[1:] if p.default is inspect.Parameter.empty]
        args = [object() for _ in required]
        answer = getattr(admin, name)(*args)
        called, ctx, passed = calls[-1]
        assert called == name
        assert ctx.client is admin.network_client
        assert list(passed[:len(args)]) == args
        assert answer in (None, f"answer of {name}")
    assert [c[0] for c in calls] == list(_operations())
    admin.close()


def test_a_table_entry_of_the_wrong_kind_is_refused_naming_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    create_topics = api_table.ADMIN_APIS["create_topics"]
    monkeypatch.setitem(api_table.ADMIN_APIS, "create_topics", api_table.ADMIN_APIS["delete_topics"])
    with pytest.raises(IllegalStateError, match=r"api_table\.py"):
        api_table.api("create_topics", create_topics)


def test_merged_results_keep_the_first_error_of_the_first_group() -> None:
    first: ApiResult[str, int] = ApiResult(completed={"a": 1}, failed={"b": TopicExistsError("b")})
    second: ApiResult[str, int] = ApiResult(completed={"c": 3}, failed={"d": UnknownTopicOrPartitionError("d")})
    merged: ApiResult[str, int] = ApiResult()
    merged.merge(first)
    merged.merge(second)
    assert merged.completed == {"a": 1, "c": 3}
    assert list(merged.failed) == ["b", "d"]
    with pytest.raises(TopicExistsError):
        merged.raise_first_error()
    assert ApiResult[str, int]().first_error() is None


def _low_watermarks(request: SentRequest) -> DeleteRecordsResponse:
    return DeleteRecordsResponse(topics=[
        DeleteRecordsResponse.DeleteRecordsTopicResult(name=t.name, partitions=[
            DeleteRecordsResponse.DeleteRecordsPartitionResult(
                partition_index=p.partition_index, low_watermark=9 if p.offset < 0 else p.offset)
            for p in t.partitions])
        for t in request.body.topics])


def test_delete_records_asks_each_partition_leader_once_and_refuses_unknown_or_leaderless_partitions() -> None:
    env = Env()
    env.responders[ApiKey.DELETE_RECORDS] = _low_watermarks
    out = env.admin.delete_records({("t", 0): 5, TopicPartition("t", 1): -1}, timeout=5)
    assert out == {TopicPartition("t", 0): 5, TopicPartition("t", 1): 9}
    assert all(isinstance(tp, TopicPartition) for tp in out)
    asked = {r.destination: [(t.name, [p.partition_index for p in t.partitions]) for t in r.body.topics]
             for r in env.sent(ApiKey.DELETE_RECORDS)}
    assert asked == {"0": [("t", [0])], "1": [("t", [1])]}
    with pytest.raises(UnknownTopicOrPartitionError, match=r"partition t-7 does not exist"):
        env.admin.delete_records({("t", 7): 1}, timeout=5)
    env.responders[ApiKey.METADATA] = lambda r: metadata_response(BROKERS, {"t": 2}, leaders={("t", 1): -1})
    with pytest.raises(LeaderNotAvailableError, match=r"t-1 has no leader"):
        env.admin.delete_records({("t", 0): 1, ("t", 1): 1}, timeout=5)
    assert len(env.sent(ApiKey.DELETE_RECORDS)) == 2  # nothing sent for the refused calls
    env.admin.close()
