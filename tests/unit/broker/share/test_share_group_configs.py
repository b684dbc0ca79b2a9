"""Per-group share configs: validation and how they override the broker's values."""

from __future__ import annotations

import pytest

from mini_broker.share import group_configs
from mini_broker.share.config import ShareGroupConfig
from pykafka_client.errors import InvalidConfigurationError

BROKER = ShareGroupConfig(session_timeout_ms=45000, heartbeat_interval_ms=5000)


def test_overrides_apply_over_the_broker_values() -> None:
    overrides = group_configs.validate({"share.auto.offset.reset": " Earliest ", "share.record.lock.duration.ms": "900"},
                                       BROKER)
    assert overrides == {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "900"}
    config = group_configs.for_group(BROKER, overrides)
    assert (config.auto_offset_reset, config.record_lock_duration_ms) == ("earliest", 900)
    described = {e.name: (e.value, e.is_group_value) for e in group_configs.describe(overrides, BROKER)}
    assert described["share.auto.offset.reset"] == ("earliest", True)
    assert described["share.isolation.level"] == ("read_uncommitted", False)


@pytest.mark.parametrize(("name", "value", "why"), [
    ("share.isolation.level", "sometimes", "must be one of"),
    ("share.record.lock.duration.ms", "-5", "positive integer"),
    ("share.unknown", "1", "Unknown group config name"),
    ("share.heartbeat.interval.ms", "50000", "must be less than share.session.timeout.ms"),
])
def test_bad_values_are_refused_with_the_reason(name: str, value: str, why: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=why):
        group_configs.validate({name: value}, BROKER)
