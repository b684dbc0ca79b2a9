"""LogConfig parsing and the checkpoint file format."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_broker.log.checkpoint import OffsetCheckpointFile
from mini_broker.log.log_config import LogConfig
from pykafka_client.errors import ConfigurationError


def test_defaults_are_kafkas() -> None:
    c = LogConfig()
    assert (c.segment_bytes, c.segment_ms, c.retention_ms, c.retention_bytes) == (1 << 30, 604800000, 604800000, -1)
    assert (c.index_interval_bytes, c.max_index_size, c.max_message_bytes) == (4096, 10485760, 1048588)
    props = c.to_props()
    assert props["cleanup.policy"] == "delete" and props["message.timestamp.type"] == "CreateTime"
    assert c.is_default("segment.bytes")


def test_from_props_and_errors() -> None:
    c = LogConfig.from_props({"segment.bytes": "1024", "cleanup.policy": ["delete", "compact"]})
    assert c.segment_bytes == 1024 and c.to_props()["cleanup.policy"] == "delete,compact"
    assert not c.is_default("segment.bytes")
    for bad in ({"segment.bytes": "ten"}, {"segment.bytes": 3}, {"no.such": 1}, {"message.timestamp.type": "x"}):
        with pytest.raises(ConfigurationError):
            LogConfig.from_props(bad)


def test_from_broker_uses_synonyms_and_units() -> None:
    broker = {"log.retention.hours": 2, "log.segment.bytes": 4096, "log.roll.ms": None, "log.roll.hours": 1}
    c = LogConfig.from_broker(broker.get)
    assert (c.retention_ms, c.segment_bytes, c.segment_ms) == (7_200_000, 4096, 3_600_000)
    assert c.is_default("retention.ms")


def test_checkpoint_round_trip_and_malformed(tmp_path: Path) -> None:
    f = OffsetCheckpointFile(str(tmp_path / "cp"))
    assert f.read() == {}
    f.write({("a-b", 0): 5, ("c", 3): 0})
    assert (tmp_path / "cp").read_text().splitlines() == ["0", "2", "a-b 0 5", "c 3 0"]
    assert f.read() == {("a-b", 0): 5, ("c", 3): 0}
    (tmp_path / "cp").write_text("0\n3\na 0 1\n")
    assert f.read() == {}
