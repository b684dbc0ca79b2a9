"""``__consumer_offsets`` stays bounded under 100,000 commits of one group (issue #28's test): the commits are
pipelined OffsetCommit requests on a few connections (a group with no members commits as a standalone consumer
does), so the test spends its time in the broker, not in round trips; the log cleaner keeps the group's
partition near one segment, and a restart replays the last committed offset."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.group.group_metadata_manager import COORDINATOR_DIR, GROUP_METADATA_TOPIC_NAME
from pykafka_client import KafkaConsumer
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.headers import decode_response, encode_request
from pykafka_client.protocol.messages import OffsetCommitRequest, OffsetCommitResponse
from pykafka_client.structs import TopicPartition
from tests.doubles.frames import frame_bytes
from tests.integration.broker.test_log_compaction import wait_until
from tests.integration.security.raw_client import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

SEGMENT = 262_144
COMMITS = 100_000
IN_FLIGHT = 100
CONNECTIONS = 4
GROUP = "hundred-thousand-commits"
VERSION = 8


def _offsets_log_bytes(data_dir: str) -> int:
    """Bytes of ``.log`` files in every ``__consumer_offsets`` partition (the group's is the only one written)."""
    root = Path(data_dir) / COORDINATOR_DIR
    return sum(f.stat().st_size for d in root.glob(f"{GROUP_METADATA_TOPIC_NAME}-*") for f in d.iterdir()
               if f.name.endswith(".log"))


def _commit(offset: int, cid: int) -> bytes:
    body = OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])
    return frame_bytes(encode_request(body, VERSION, cid, "bounded-offsets-test"))


def _check_answer(client: RawClient, cid: int) -> None:
    payload = client.receive()
    assert payload is not None, f"the broker closed the connection before answering commit {cid}"
    response = decode_response(memoryview(payload), ApiKey.OFFSET_COMMIT, VERSION, cid)
    assert isinstance(response, OffsetCommitResponse)
    codes = {p.error_code for t in response.topics for p in t.partitions}
    assert codes == {0}, f"commit {cid} failed with error codes {codes}"


def _pipeline_commits(port: int, data_dir: str) -> int:
    """Commits 1..COMMITS over CONNECTIONS connections, each with up to IN_FLIGHT requests in flight (a broker
    handles one request per connection at a time, so several connections keep its handler threads busy); the
    last commit is sent alone after every other one was answered, so it is the one that stays. Returns the
    largest size of the offsets log seen meanwhile."""
    clients = [RawClient(port, timeout=60) for _ in range(CONNECTIONS)]
    try:
        largest = 0
        sent = [0] * CONNECTIONS
        answered = [0] * CONNECTIONS
        next_offset = 1
        done = 0
        while done < COMMITS - 1:
            for i, client in enumerate(clients):
                frames = []
                while next_offset < COMMITS and sent[i] - answered[i] < IN_FLIGHT:
                    sent[i] += 1
                    frames.append(_commit(next_offset, sent[i]))
                    next_offset += 1
                if frames:
                    client.send(b"".join(frames))
                if answered[i] < sent[i]:
                    answered[i] += 1
                    _check_answer(client, answered[i])
                    done += 1
                    if done % 10_000 == 0:
                        largest = max(largest, _offsets_log_bytes(data_dir))
        sent[0] += 1
        clients[0].send(_commit(COMMITS, sent[0]))
        _check_answer(clients[0], sent[0])
        return largest
    finally:
        for client in clients:
            client.close()


def test_offsets_log_stays_bounded_under_100_000_commits_of_one_group(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    config = {"log.cleaner.backoff.ms": 50, "offsets.topic.segment.bytes": SEGMENT}
    tp = TopicPartition("t", 0)
    with MiniBroker(config, data_dir=data) as broker:
        # the topic and the coordinator exist before the pipelined commits (FindCoordinator creates the log)
        with KafkaConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": GROUP,
                            "enable.auto.commit": False}) as consumer:
            consumer.assign([tp])
            consumer.commit_sync({tp: 0})
        port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
        largest = _pipeline_commits(port, data)
        # uncompacted, 100,000 commits are ~10 MB of records (40 segments); the cleaner runs while they arrive, so the log
        # never holds more than a small part of that, and settles at a few segments
        assert largest < 3_000_000, f"the offsets log reached {largest} bytes while the commits arrived"
        wait_until(lambda: 0 < _offsets_log_bytes(data) < 4 * SEGMENT, "the offsets log is compacted", 120)
        assert not [n for n in os.listdir(Path(data) / COORDINATOR_DIR) if n.endswith((".compacting", ".old"))]
    with MiniBroker(config, data_dir=data) as broker, KafkaConsumer({
            "bootstrap.servers": broker.bootstrap_servers, "group.id": GROUP}) as consumer:
        committed = consumer.committed({tp}, timeout=15)[tp]
        assert committed is not None and committed.offset == COMMITS

