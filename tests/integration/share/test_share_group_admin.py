"""The admin side of share groups (KIP-932) against a real MiniBroker, members joined on the wire: ListGroups
lists share groups with type ``share`` (and filters by it), ``describe_share_groups`` reports state, epochs,
assignor and members, DeleteGroups refuses a share group with members (NON_EMPTY_GROUP) and deletes an empty one
for good (a restart does not bring it back)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.admin import AdminClient, NewTopic
from pykafka_client.admin.group_types import AlterConfigOp
from pykafka_client.admin.types import ConfigResource, ConfigResourceType
from pykafka_client.aio.admin import AsyncAdminClient
from pykafka_client.errors import GroupIdNotFoundError, GroupNotEmptyError
from pykafka_client.protocol.messages import ConsumerGroupHeartbeatRequest, ShareGroupHeartbeatRequest
from pykafka_client.structs import TopicPartition
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TOPIC = "share-admin"


def _broker(**conf: Any) -> MiniBroker:
    return MiniBroker(num_network_threads=1, num_io_threads=2, **conf)


def _admin(broker: MiniBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _share_member(c: Conn, group: str, member: str, epoch: int = 0) -> int:
    """Join (epoch 0) or leave (epoch -1) the share group; returns the member epoch."""
    hb = c.call(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                           subscribed_topic_names=[TOPIC] if epoch == 0 else None), 1)
    assert hb.error_code == 0, hb
    return int(hb.member_epoch)


def test_list_groups_lists_share_groups_with_their_type_and_filters_by_it() -> None:
    with _broker() as b, _admin(b) as admin, Conn(b) as c:
        admin.create_topics([NewTopic(TOPIC, 2, 1)])
        _share_member(c, "sg", "m1")
        _share_member(c, "sg-empty", "m2")
        _share_member(c, "sg-empty", "m2", -1)
        assert c.call(ConsumerGroupHeartbeatRequest(
            group_id="cg", member_id="cm", member_epoch=0, rebalance_timeout_ms=5000,
            subscribed_topic_names=[TOPIC], topic_partitions=[]), 1).error_code == 0

        every = {(g.group_id, g.state, g.protocol_type, g.type) for g in admin.list_groups()}
        assert {("sg", "Stable", "share", "share"), ("sg-empty", "Empty", "share", "share")} <= every
        assert {g[0] for g in every if g[3] == "consumer"} == {"cg"}
        assert [g.group_id for g in admin.list_groups(types=["share"])] == ["sg", "sg-empty"]
        assert [g.group_id for g in admin.list_consumer_groups(types=["consumer"])] == ["cg"]


def test_describe_share_groups_reports_state_epochs_and_members_and_fails_an_unknown_group() -> None:
    with _broker() as b, _admin(b) as admin, Conn(b, client_id="share-describer") as c:
        admin.create_topics([NewTopic(TOPIC, 2, 1)])
        _share_member(c, "sg", "m1")
        _share_member(c, "sg", "m2")
        d = admin.describe_share_groups(["sg"])["sg"]
        assert (d.group_id, d.state, d.partition_assignor) == ("sg", "Stable", "simple")
        assert d.group_epoch == d.target_assignment_epoch == 2
        assert d.coordinator is not None and d.coordinator.port == b.port
        assert sorted(m.member_id for m in d.members) == ["m1", "m2"]
        assert all(m.client_id == "share-describer" and m.subscribed_topic_names == [TOPIC] for m in d.members)
        # the simple assignor: two members, two partitions, one each
        assert sorted(tp for m in d.members for tp in m.assignment) == [TopicPartition(TOPIC, 0),
                                                                         TopicPartition(TOPIC, 1)]
        with pytest.raises(GroupIdNotFoundError, match="nope"):
            admin.describe_share_groups(["sg", "nope"])


def test_delete_share_groups_refuses_a_group_with_members_then_deletes_it_for_good(tmp_path: Path) -> None:
    group = f"sg-{uuid.uuid4().hex[:6]}"
    with _broker(data_dir=str(tmp_path)) as b, _admin(b) as admin, Conn(b) as c:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        _share_member(c, group, "m1")
    # replayed from __consumer_offsets: listed once, as a share group (not also as an empty classic group)
    with _broker(data_dir=str(tmp_path)) as b, _admin(b) as admin, Conn(b) as c:
        assert [(g.group_id, g.type) for g in admin.list_groups()] == [(group, "share")]
        with pytest.raises(GroupNotEmptyError, match=group):
            admin.delete_share_groups([group])
        assert admin.describe_share_groups([group])[group].state == "Stable"
        _share_member(c, group, "m1", -1)
        admin.delete_share_groups([group])
        assert admin.list_groups(types=["share"]) == []
        with pytest.raises(GroupIdNotFoundError):
            admin.delete_share_groups([group])
    # the deletion was written to __consumer_offsets: the restarted broker does not replay the group
    with _broker(data_dir=str(tmp_path)) as b, _admin(b) as admin:
        assert admin.list_groups() == []
        with pytest.raises(GroupIdNotFoundError):
            admin.describe_share_groups([group])


def test_the_async_admin_describes_lists_and_deletes_share_groups() -> None:
    with _broker() as b, Conn(b) as c:
        with _admin(b) as admin:
            admin.create_topics([NewTopic(TOPIC, 1, 1)])
        _share_member(c, "sg", "m1")
        _share_member(c, "sg", "m1", -1)

        async def run() -> tuple[str, list[str]]:
            async with AsyncAdminClient({"bootstrap.servers": b.bootstrap_servers}) as admin:
                state = (await admin.describe_share_groups(["sg"]))["sg"].state
                await admin.delete_share_groups(["sg"])
                return state, [g.group_id for g in await admin.list_groups(types=["share"])]

        assert asyncio.run(run()) == ("Empty", [])


def test_a_share_groups_configs_are_set_and_described_through_the_admin_as_group_resources() -> None:
    # ConfigResource.Type.GROUP is 32 on the wire (it was sent as 3, the ACL resource type, and refused)
    group = f"sg-{uuid.uuid4().hex[:6]}"
    resource = ConfigResource(ConfigResourceType.GROUP, group)
    with _broker() as b, _admin(b) as admin, Conn(b) as c:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        _share_member(c, group, "m1")
        admin.incremental_alter_configs({resource: [AlterConfigOp("share.record.lock.duration.ms", "15000")]})
        entries = admin.describe_configs([resource])[resource]
        assert entries["share.record.lock.duration.ms"].value == "15000"
