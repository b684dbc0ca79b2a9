"""A GroupCoordinator driven by a MockTime with inline timers: nothing expires until ``advance``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from mini_broker.group import (
    CommittedOffset,
    GroupConfig,
    GroupCoordinator,
    GroupMetadata,
    GroupMetadataManager,
    HeartbeatParams,
    JoinGroupParams,
    JoinGroupResult,
    LeaveGroupParams,
    LeaveMember,
    LeaveMemberResult,
    OffsetCommitParams,
    SyncGroupParams,
    SyncGroupResult,
)
from pykafka_client.protocol.types import Writer
from pykafka_client.utils.time import MockTime

T = TypeVar("T")

GROUP = "group"
PROTOCOL_TYPE = "consumer"
SESSION_MS = 10_000
REBALANCE_MS = 60_000
INITIAL_DELAY_MS = 100


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0 bytes."""
    w = Writer()
    w.write_int16(0)
    w.write_array_length(len(topics))
    for t in topics:
        w.write_string(t)
    w.write_nullable_bytes(None)
    return w.to_bytes()


PROTOCOLS: list[tuple[str, bytes]] = [("range", subscription("t"))]


class Box(Generic[T]):
    """Where a callback answer lands; ``value`` is None until answered."""

    def __init__(self) -> None:
        self.values: list[T] = []

    def __call__(self, v: T) -> None:
        self.values.append(v)

    @property
    def done(self) -> bool:
        return bool(self.values)

    @property
    def value(self) -> T:
        assert len(self.values) == 1, f"expected exactly one answer, got {self.values}"
        return self.values[0]


class Harness:
    def __init__(self, data_dir: str | None = None, time: MockTime | None = None, **config: int) -> None:
        self.time = time if time is not None else MockTime()
        config.setdefault("group_initial_rebalance_delay_ms", INITIAL_DELAY_MS)
        self.data_dir = data_dir
        self.coordinator = GroupCoordinator(GroupConfig(**config), GroupMetadataManager(data_dir, self.time),
                                            self.time, timer_run_inline=True, reaper_enabled=False)
        self.coordinator.startup()

    def close(self) -> None:
        self.coordinator.shutdown()

    def advance(self, ms: int) -> None:
        self.time.sleep(ms)
        self.coordinator.advance_clock()

    def finish_initial_join(self) -> None:
        """Two initial delays, one at a time: the second covers members that joined during the first."""
        self.advance(INITIAL_DELAY_MS)
        self.advance(INITIAL_DELAY_MS)

    def group(self, group_id: str = GROUP) -> GroupMetadata:
        g = self.coordinator.get_group(group_id)
        assert g is not None
        return g

    def join(self, member_id: str = "", *, group_id: str = GROUP, instance_id: str | None = None,
             protocols: Sequence[tuple[str, bytes]] = PROTOCOLS, session_ms: int = SESSION_MS,
             rebalance_ms: int = REBALANCE_MS, require_known: bool = False, skip: bool = False,
             protocol_type: str = PROTOCOL_TYPE, client_id: str = "client") -> Box[JoinGroupResult]:
        box: Box[JoinGroupResult] = Box()
        self.coordinator.handle_join_group(JoinGroupParams(
            group_id=group_id, member_id=member_id, group_instance_id=instance_id, require_known_member_id=require_known,
            support_skipping_assignment=skip, client_id=client_id, client_host="/127.0.0.1",
            rebalance_timeout_ms=rebalance_ms, session_timeout_ms=session_ms, protocol_type=protocol_type,
            protocols=list(protocols)), box)
        return box

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None, *,
             group_id: str = GROUP, instance_id: str | None = None) -> Box[SyncGroupResult]:
        box: Box[SyncGroupResult] = Box()
        self.coordinator.handle_sync_group(SyncGroupParams(
            group_id=group_id, generation_id=generation, member_id=member_id, group_instance_id=instance_id,
            protocol_type=PROTOCOL_TYPE, assignments=assignments or {}), box)
        return box

    def heartbeat(self, member_id: str, generation: int, *, group_id: str = GROUP,
                  instance_id: str | None = None) -> int:
        return self.coordinator.handle_heartbeat(HeartbeatParams(group_id, member_id, generation, instance_id))

    def leave(self, *members: LeaveMember, group_id: str = GROUP) -> tuple[int, list[LeaveMemberResult]]:
        return self.coordinator.handle_leave_group(LeaveGroupParams(group_id, members))

    def commit(self, member_id: str, generation: int, offsets: dict[tuple[str, int], int], *,
               group_id: str = GROUP, instance_id: str | None = None, metadata: str = "") -> dict[tuple[str, int], int]:
        now = self.time.milliseconds()
        return self.coordinator.handle_commit_offsets(OffsetCommitParams(
            group_id, {tp: CommittedOffset(o, -1, metadata, now) for tp, o in offsets.items()}, member_id, generation,
            instance_id))

    def fetch(self, partitions: list[tuple[str, int]] | None, group_id: str = GROUP) -> dict[tuple[str, int], int]:
        error, out = self.coordinator.handle_fetch_offsets(group_id, partitions)
        assert error == 0
        return {tp: fo.offset for tp, fo in out.items()}

    def stable_group(self, n: int = 1, **join_kw: object) -> list[str]:
        """Form a Stable group of ``n`` dynamic members at generation 1; returns their ids (leader first)."""
        boxes = [self.join(**join_kw) for _ in range(n)]  # type: ignore[arg-type]
        self.finish_initial_join()
        results = [b.value for b in boxes]
        assert all(r.error_code == 0 for r in results), results
        leader = results[0].leader_id
        ids = [leader] + [r.member_id for r in results if r.member_id != leader]
        gen = results[0].generation_id
        syncs = [self.sync(m, gen, {m: m.encode() for m in ids} if m == leader else None) for m in ids]
        assert all(s.value.error_code == 0 for s in syncs)
        return ids
