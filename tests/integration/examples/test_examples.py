"""The examples under examples/ run as documented (each starts its own mini_broker process)."""

from __future__ import annotations

import pytest

from examples import admin, consumer_group, producer

pytestmark = pytest.mark.integration


def test_consumer_group_example_processes_every_record_once_across_a_restart(capsys: pytest.CaptureFixture[str]) -> None:
    assert consumer_group.main(["--records", "300"]) == 0
    out = capsys.readouterr().out
    assert "consumer-1: assigned [0, 1, 2]" in out
    assert "consumer-2: assigned [0, 1, 2]" in out
    assert "every record processed exactly once across both consumers: True" in out


def test_admin_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert admin.main([]) == 0
    out = capsys.readouterr().out
    assert "creating it again raises TopicExistsError" in out
    assert "example-admin has partitions [0, 1, 2, 3]" in out
    assert "retention.ms = 3600000" in out
    assert "end offsets: {0: 5, 1: 5, 2: 0, 3: 0}" in out
    assert "offsets of a missing topic raise UnknownTopicOrPartitionError at once" in out
    assert "deleted example-admin: True" in out


def test_producer_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert producer.main([]) == 0
    assert "1001 records sent, 0 failed" in capsys.readouterr().out
