"""The offsets log: record codec, and a coordinator restarted on the same data dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.group import CommittedOffset, GroupState, LeaveMember
from mini_broker.group.group_metadata_manager import (
    GroupMetadataManager,
    LoadedGroup,
    StoredGroup,
    StoredMember,
    apply_record,
    group_metadata_key,
    group_metadata_records,
    group_metadata_value,
    offset_commit_key,
    offset_commit_records,
    offset_commit_value,
    tombstone_records,
)
from mini_broker.log.log_cleaner import Cleaner, CleanerConfig
from mini_broker.log.log_cleaner_manager import measure
from pykafka_client.errors import FencedInstanceIdError, MessageDecodeError
from pykafka_client.utils.time import MockTime
from tests.unit.broker.group.harness import Harness

NONE = 0


def test_codec_round_trip_and_tombstones() -> None:
    groups: dict[str, LoadedGroup] = {}
    om = CommittedOffset(42, 3, "meta", 1000, -1)
    apply_record(groups, offset_commit_key("g", "t", 1), offset_commit_value(om))
    stored = StoredGroup("consumer", 4, "range", "m1", 77,
                         [StoredMember("m1", "i-1", "c", "/h", 60000, 10000, b"sub", b"asg")])
    apply_record(groups, group_metadata_key("g"), group_metadata_value(stored))
    assert groups["g"].offsets == {("t", 1): om} and groups["g"].group == stored
    apply_record(groups, offset_commit_key("g", "t", 1), None)
    assert groups["g"].offsets == {}
    apply_record(groups, group_metadata_key("g"), None)
    assert "g" not in groups


def test_codec_rejects_garbage() -> None:
    with pytest.raises(MessageDecodeError):
        apply_record({}, b"\x00\x07", b"")
    with pytest.raises(MessageDecodeError):
        apply_record({}, offset_commit_key("g", "t", 0), b"\x00\x03\x00")


def test_offsets_and_group_survive_restart(tmp_path: Path) -> None:
    time = MockTime()
    h = Harness(str(tmp_path), time)
    a = h.join(instance_id="i-a")
    b = h.join()
    h.finish_initial_join()
    leader = a.value.leader_id
    ids = [a.value.member_id, b.value.member_id]
    for m in ids:
        h.sync(m, 1, {ids[0]: b"A", ids[1]: b"B"} if m == leader else None,
               instance_id="i-a" if m == ids[0] else None)
    assert h.commit(ids[0], 1, {("t", 0): 5, ("t", 1): 6}, instance_id="i-a") == {("t", 0): NONE, ("t", 1): NONE}
    h.commit("", -1, {("u", 0): 9}, group_id="manual")
    h.commit("", -1, {("u", 0): 1}, group_id="deleted")
    h.coordinator.handle_delete_groups(["deleted"])
    h.close()

    h2 = Harness(str(tmp_path), time)
    try:
        assert h2.fetch([("t", 0), ("t", 1)]) == {("t", 0): 5, ("t", 1): 6}
        assert h2.fetch([("u", 0)], group_id="manual") == {("u", 0): 9}
        assert h2.coordinator.get_group("deleted") is None
        g = h2.group()
        assert (g.state, g.generation_id, g.protocol_name, g.leader_id) == (GroupState.STABLE, 1, "range", leader)
        assert g.get(ids[0]).assignment == b"A" and g.get(ids[1]).assignment == b"B"
        assert g.static_members == {"i-a": ids[0]}
        # Members carry on with their generation...
        assert h2.heartbeat(ids[0], 1, instance_id="i-a") == NONE
        assert h2.sync(ids[1], 1).value.assignment == b"B"
        # ...a stale static member id is fenced...
        assert h2.heartbeat("i-a-old", 1, instance_id="i-a") == FencedInstanceIdError.code
        # ...and members that went away with the old broker expire after their session timeout.
        h2.advance(10_000)
        assert not g.has(ids[1]) and g.state is not GroupState.STABLE
    finally:
        h2.close()


def test_empty_group_generation_survives_restart(tmp_path: Path) -> None:
    time = MockTime()
    h = Harness(str(tmp_path), time)
    leader, = h.stable_group(1)
    h.leave(LeaveMember(leader))
    assert h.group().state is GroupState.EMPTY and h.group().generation_id == 2
    h.commit("", -1, {("t", 0): 1})
    h.close()
    h2 = Harness(str(tmp_path), time)
    try:
        g = h2.group()
        assert (g.state, g.generation_id, g.protocol_type) == (GroupState.EMPTY, 2, "consumer")
        assert h2.fetch([("t", 0)]) == {("t", 0): 1}
    finally:
        h2.close()


def _store_offsets(m: GroupMetadataManager, group_id: str, offsets: dict[tuple[str, int], CommittedOffset],
                   now: int) -> None:
    """What the coordinator runtime does with an offset commit's records (the test stands in for it)."""
    m.partition.append(offset_commit_records(group_id, offsets, now) or b"")


def _store_group(m: GroupMetadataManager, group_id: str, group: StoredGroup, now: int) -> None:
    m.partition.append(group_metadata_records(group_id, group, now) or b"")


def _delete(m: GroupMetadataManager, group_id: str, offsets: list[tuple[str, int]], group_too: bool,
            now: int) -> None:
    m.partition.append(tombstone_records(group_id, offsets, group_too, now) or b"")


def _manager(path: Path) -> GroupMetadataManager:
    return GroupMetadataManager(str(path), MockTime())


def clean_offsets_log(m: GroupMetadataManager) -> None:
    """What the broker's log cleaner does to the offsets log (it is registered with the LogManager's cleaner)."""
    log = m.log
    assert log is not None and log.config.compact  # cleanup.policy=compact, as Kafka's __consumer_offsets
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    time = MockTime()
    Cleaner(CleanerConfig(), time).clean(measure(log, None, time.milliseconds()))


def test_a_cleaned_log_replays_the_same_groups_and_offsets_keep_their_offsets(tmp_path: Path) -> None:
    m = _manager(tmp_path)
    assert m.load() == {}
    for i in range(50):
        _store_offsets(m, "g", {("t", 0): CommittedOffset(i, -1, "", i), ("t", 1): CommittedOffset(i, -1, "", i)}, i)
    _store_group(m, "g", StoredGroup("consumer", 3, "range", None, 5, []), 60)
    _store_offsets(m, "gone", {("t", 0): CommittedOffset(1, -1, "", 1)}, 61)
    _delete(m, "gone", [("t", 0)], True, 62)
    before = m.load()
    end = m.log.log_end_offset if m.log is not None else -1
    clean_offsets_log(m)
    assert m.log is not None and m.log.log_end_offset == end  # offsets are never renumbered
    kept = sum(1 for _ in m.partition.batches())
    assert kept < 10  # 2 live offsets + the group (+ the tombstones until their delete horizon), not 104 records
    m.close()

    m2 = _manager(tmp_path)
    loaded = m2.load()
    assert set(loaded) == {"g"} and loaded == before
    assert loaded["g"].offsets == {("t", 0): CommittedOffset(49, -1, "", 49),
                                   ("t", 1): CommittedOffset(49, -1, "", 49)}
    assert loaded["g"].group == StoredGroup("consumer", 3, "range", None, 5, [])
    _store_offsets(m2, "g", {("t", 2): CommittedOffset(7, -1, "", 70)}, 70)
    m2.close()

    m3 = _manager(tmp_path)
    again = m3.load()
    assert again["g"].offsets[("t", 2)].offset == 7 and again["g"].offsets[("t", 0)].offset == 49
    m3.close()


@pytest.mark.parametrize("compacted_copy_complete", [True, False])
def test_interrupted_compaction_is_recovered(tmp_path: Path, compacted_copy_complete: bool) -> None:
    m = _manager(tmp_path)
    _store_offsets(m, "g", {("t", 0): CommittedOffset(5, -1, "", 1)}, 1)
    m.close()
    main = tmp_path / "__group_coordinator"
    if compacted_copy_complete:  # crash after the first rename, the compacted copy in place
        shutil.copytree(main, tmp_path / "__group_coordinator.compacting")
    main.rename(tmp_path / "__group_coordinator.old")
    m2 = _manager(tmp_path)
    assert m2.load()["g"].offsets[("t", 0)].offset == 5
    assert main.exists() and not (tmp_path / "__group_coordinator.old").exists()
    m2.close()


@settings(max_examples=200, deadline=None)
@given(key=st.binary(max_size=64), value=st.one_of(st.none(), st.binary(max_size=64)))
def test_garbage_records_raise_message_decode_error(key: bytes, value: bytes | None) -> None:
    groups: dict[str, LoadedGroup] = {}
    try:
        apply_record(groups, key, value)
    except MessageDecodeError:
        pass


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(min_value=0, max_value=200))
def test_truncated_group_value_raises_message_decode_error(cut: int) -> None:
    value = group_metadata_value(StoredGroup("consumer", 4, "range", "m1", 77, [
        StoredMember("m1", "i-1", "c", "/h", 60000, 10000, b"sub", b"asg")]))
    if cut >= len(value):
        return
    with pytest.raises(MessageDecodeError):
        apply_record({}, group_metadata_key("g"), value[:cut])
