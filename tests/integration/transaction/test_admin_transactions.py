"""AdminClient.describe_transactions / list_transactions against a real MiniBroker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.admin import AdminClient, TransactionState
from pykafka_client.errors import TransactionalIdNotFoundError
from pykafka_client.structs import TopicPartition
from tests.integration.transaction.test_transaction_apis_wire import TOPIC, add_v3, init, start
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MiniBroker]:
    b, _ = start(tmp_path)
    try:
        yield b
    finally:
        b.shutdown()


def test_describe_and_list_transactions(broker: MiniBroker) -> None:
    with Conn(broker) as c:
        r = init(c, "open", timeout_ms=45000)
        add_v3(c, "open", r.producer_id, r.producer_epoch, [0, 1])
        idle = init(c, "idle")
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        d = admin.describe_transactions(["open", "idle"], timeout=10)
        assert d["open"].state is TransactionState.ONGOING
        assert (d["open"].producer_id, d["open"].producer_epoch, d["open"].transaction_timeout_ms) == (
            r.producer_id, r.producer_epoch, 45000)
        assert d["open"].topic_partitions == {(TOPIC, 0), (TOPIC, 1)}
        assert all(type(tp) is TopicPartition for tp in d["open"].topic_partitions)  # as typed
        assert d["open"].transaction_start_time_ms is not None and d["open"].coordinator_id == 0
        assert d["idle"].state is TransactionState.EMPTY and d["idle"].transaction_start_time_ms is None
        with pytest.raises(TransactionalIdNotFoundError, match="missing"):
            admin.describe_transactions(["missing"], timeout=10)
        listed = admin.list_transactions(timeout=10)
        assert sorted((t.transactional_id, t.producer_id, t.state) for t in listed) == sorted([
            ("open", r.producer_id, TransactionState.ONGOING), ("idle", idle.producer_id, TransactionState.EMPTY)])
        assert [t.transactional_id for t in admin.list_transactions(states=[TransactionState.ONGOING], timeout=10)] \
            == ["open"]
        assert [t.transactional_id for t in admin.list_transactions(producer_ids=[idle.producer_id], timeout=10)] \
            == ["idle"]
        assert admin.list_transactions([TransactionState.ONGOING], duration_ms=3_600_000, timeout=10) == []
        with pytest.raises(TypeError, match="TransactionState"):
            admin.list_transactions(states=["Ongoing"])  # type: ignore[list-item]
