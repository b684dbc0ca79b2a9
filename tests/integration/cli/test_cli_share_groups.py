"""``pykafka share-groups list | describe | reset-offsets | delete-offsets | delete`` (in process) against one
MiniBroker, the members joined on the wire (ShareGroupHeartbeat): the listing shows share groups only, describe
their members, assignments and share-partition start offsets with lag, reset-offsets plans unless --execute,
reset-offsets, delete-offsets and delete refuse a group with members (exit 5); an unknown group exits 4."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.messages import ConsumerGroupHeartbeatRequest, ShareGroupHeartbeatRequest
from tests.integration.cli.conftest import Run, one_error_line
from tests.integration.share.helpers import produce
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _heartbeat(broker: MiniBroker, group: str, member: str, topic: str, epoch: int) -> None:
    with Conn(broker, client_id="cli-share") as c:
        hb = c.call(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                               subscribed_topic_names=[topic] if epoch == 0 else None), 1)
    assert hb.error_code == 0, hb


def test_list_describe_and_delete_share_groups(pykafka: Run, broker: MiniBroker) -> None:
    topic = f"cli-share-{uuid.uuid4().hex[:6]}"
    group = f"sg-{topic}"
    assert pykafka("topics", "create", topic, "--partitions", "2").returncode == 0
    # a consumer group the share listing leaves out
    with Conn(broker) as c:
        assert c.call(ConsumerGroupHeartbeatRequest(
            group_id=f"cg-{topic}", member_id="cm", member_epoch=0, rebalance_timeout_ms=5000,
            subscribed_topic_names=[topic], topic_partitions=[]), 1).error_code == 0
    _heartbeat(broker, group, "member-1", topic, 0)

    listed = pykafka("share-groups", "list", "--output", "json")
    assert listed.returncode == 0, listed.stderr
    assert [g for g in json.loads(listed.stdout) if g["group"] == group] == [{"group": group, "state": "Stable"}]
    assert all(g["group"] != f"cg-{topic}" for g in json.loads(listed.stdout))
    typed = json.loads(pykafka("groups", "list", "--type", "share", "--output", "json").stdout)
    assert {"group": group, "state": "Stable", "protocol_type": "share", "type": "share"} in typed

    described = pykafka("share-groups", "describe", group, "--output", "json")
    assert described.returncode == 0, described.stderr
    [d] = json.loads(described.stdout)
    assert (d["group"], d["state"], d["assignor"], d["group_epoch"]) == (group, "Stable", "simple", 1)
    [member] = d["members"]
    assert (member["member_id"], member["client_id"]) == ("member-1", "cli-share")
    assert member["assignment"] == [f"{topic}-0", f"{topic}-1"] and member["subscribed_topics"] == [topic]
    text = pykafka("share-groups", "describe", group).stdout.decode().splitlines()
    assert text[0].startswith(f"Group: {group}  State: Stable  Assignor: simple  Epoch: 1")
    assert text[2].split() == ["MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"]
    assert text[3].split()[0] == "member-1" and text[3].split()[-1] == f"{topic}-0,{topic}-1"

    refused = pykafka("share-groups", "delete", "--group", group)
    assert refused.returncode == 5, refused.stderr
    assert "active members" in one_error_line(refused)

    _heartbeat(broker, group, "member-1", topic, -1)
    deleted = pykafka("share-groups", "delete", "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stderr.decode().strip() == f"Deleted share group {group}."
    assert group not in pykafka("share-groups", "list").stdout.decode()


def test_describing_or_deleting_an_unknown_share_group_exits_4(pykafka: Run) -> None:
    for args in (("describe", "no-such-share-group"), ("delete", "--group", "no-such-share-group")):
        result = pykafka("share-groups", *args)
        assert result.returncode == 4, result.stderr
        assert "no-such-share-group" in one_error_line(result)


def _offsets(pykafka: Run, group: str) -> list[dict[str, Any]]:
    result = pykafka("share-groups", "describe", group, "--offsets", "--output", "json")
    assert result.returncode == 0, result.stderr
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def test_reset_offsets_plans_then_sets_start_offsets_and_describe_shows_them_with_lag(pykafka: Run,
                                                                                       broker: MiniBroker) -> None:
    topic = f"cli-share-reset-{uuid.uuid4().hex[:6]}"
    group = f"sg-{topic}"
    assert pykafka("topics", "create", topic, "--partitions", "1").returncode == 0
    produce(broker, topic, [f"v{i}" for i in range(5)])
    _heartbeat(broker, group, "member-1", topic, 0)  # the group exists, with no share partition yet
    _heartbeat(broker, group, "member-1", topic, -1)
    assert _offsets(pykafka, group) == []

    planned = pykafka("share-groups", "reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert planned.returncode == 0, planned.stderr
    lines = planned.stdout.decode().splitlines()
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "NEW-START-OFFSET"]
    assert lines[1].split() == [group, topic, "0", "-", "0"]
    assert "Dry run" in planned.stderr.decode()
    assert _offsets(pykafka, group) == []  # nothing changed

    done = pykafka("share-groups", "reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().strip() == f"Start offsets of share group {group} reset for 1 partition(s)."
    assert _offsets(pykafka, group) == [{"group": group, "topic": topic, "partition": 0, "start_offset": 0, "lag": 5}]
    text = pykafka("share-groups", "describe", group).stdout.decode().splitlines()
    assert text[0].startswith(f"Group: {group}  State: Empty")
    assert text[-2].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    assert text[-1].split() == [group, topic, "0", "0", "5"]

    latest = pykafka("share-groups", "reset-offsets", "--group", group, "--all-topics", "--to-latest", "--execute",
                     "--output", "json")
    assert latest.returncode == 0, latest.stderr
    assert json.loads(latest.stdout) == [{"group": group, "topic": topic, "partition": 0, "start_offset": 0,
                                          "new_start_offset": 5}]
    assert [(o["start_offset"], o["lag"]) for o in _offsets(pykafka, group)] == [(5, 0)]
    dated = pykafka("share-groups", "reset-offsets", "--group", group, "--topic", f"{topic}:0",
                    "--to-datetime", "2001-01-01T00:00:00Z", "--execute")
    assert dated.returncode == 0, dated.stderr
    assert _offsets(pykafka, group)[0]["start_offset"] == 0
    for wanted, kept in (("3", 3), ("99", 5)):  # kept within the log
        to = pykafka("share-groups", "reset-offsets", "--group", group, "--topic", topic, "--to-offset", wanted,
                     "--execute")
        assert to.returncode == 0, to.stderr
        assert _offsets(pykafka, group) == [{"group": group, "topic": topic, "partition": 0, "start_offset": kept,
                                             "lag": 5 - kept}]

    _heartbeat(broker, group, "member-2", topic, 0)
    for args in (("reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute"),
                 ("delete-offsets", "--group", group, "--topic", topic)):
        refused = pykafka("share-groups", *args)
        assert refused.returncode == 5, refused.stderr
        assert "member" in one_error_line(refused)
    assert _offsets(pykafka, group)[0]["start_offset"] == 5
    _heartbeat(broker, group, "member-2", topic, -1)

    deleted = pykafka("share-groups", "delete-offsets", "--group", group, "--topic", topic)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stderr.decode().strip() == f"Deleted the offsets of topic {topic} from share group {group}."
    assert _offsets(pykafka, group) == []


def test_reset_offsets_with_nothing_to_reset_exits_4_and_of_a_new_group_creates_it(pykafka: Run,
                                                                                    broker: MiniBroker) -> None:
    topic = f"cli-share-none-{uuid.uuid4().hex[:6]}"
    assert pykafka("topics", "create", topic).returncode == 0
    for group in ("no-such-share-group", f"sg-{topic}"):  # unknown; known without share partitions
        if group != "no-such-share-group":
            _heartbeat(broker, group, "m", topic, 0)
            _heartbeat(broker, group, "m", topic, -1)
        empty = pykafka("share-groups", "reset-offsets", "--group", group, "--all-topics", "--to-earliest")
        assert empty.returncode == 4, empty.stderr
        assert f"share group {group!r} has no share partitions" in one_error_line(empty)
    produce(broker, topic, ["a", "b"])
    new = pykafka("share-groups", "reset-offsets", "--group", f"new-{topic}", "--topic", topic, "--to-latest",
                  "--execute")
    assert new.returncode == 0, new.stderr
    assert _offsets(pykafka, f"new-{topic}") == [{"group": f"new-{topic}", "topic": topic, "partition": 0,
                                                 "start_offset": 2, "lag": 0}]
