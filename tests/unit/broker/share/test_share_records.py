"""Share groups' records in __consumer_offsets: a group's image replays to the same group."""

from __future__ import annotations

import uuid

import pytest

from mini_broker.group.consumer.records import diff
from mini_broker.share.group import ShareGroup, ShareGroupMember
from mini_broker.share.records import group_records, replay
from pykafka_client.errors import MessageDecodeError

T = uuid.UUID(int=3)


def _group() -> ShareGroup:
    g = ShareGroup("g", group_epoch=4, assignment_epoch=4)
    g.members["a"] = ShareGroupMember("a", 4, ("t", "u"), "rack1", "cid", "/1.2.3.4", {T: frozenset({0, 2})})
    g.members["b"] = ShareGroupMember("b", 3, ("t",), None, "cid2", "/h", {})
    return g


def test_a_group_image_replays_to_the_same_group() -> None:
    back = replay(group_records(_group()).items())["g"]
    assert (back.group_epoch, back.assignment_epoch) == (4, 4)
    assert back.members == _group().members


def test_a_member_leaving_is_written_as_tombstones() -> None:
    before = group_records(_group())
    smaller = _group()
    del smaller.members["b"]
    changes = diff(before, group_records(smaller))
    tombstones = [k for k, v in changes if v is None]
    assert len(tombstones) == 2  # the member's metadata and its assignment
    live = {k: v for k, v in before.items() if k not in tombstones}
    assert set(replay(live.items())["g"].members) == {"a"}


def test_an_unreadable_record_is_refused() -> None:
    key, value = next(iter(group_records(_group()).items()))
    with pytest.raises(MessageDecodeError):
        replay([(key, b"\x00\x09" + value[2:])])
