"""``pykafka leaders elect`` and ``pykafka topics reassign`` against one MiniBroker (the only replica always
leads, and can only stay where it is); the moves themselves are pinned on a cluster by
tests/integration/cluster/test_cluster_metadata.py."""

from __future__ import annotations

import json
import uuid

import pytest

from mini_broker.broker import MiniBroker
from tests.integration.cli.conftest import Run, one_error_line

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_leaders_elect_and_topics_reassign_on_a_single_broker(pykafka: Run, broker: MiniBroker) -> None:
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    assert pykafka("topics", "create", topic, "--partitions", "2").returncode == 0
    elected = pykafka("leaders", "elect", topic, "--output", "json")
    assert elected.returncode == 0, elected.stderr
    assert json.loads(elected.stdout) == [{"topic": topic, "partition": p, "result": "not needed"} for p in (0, 1)]

    node = str(broker.config.node_id)
    moved = pykafka("topics", "reassign", topic, "--partition", "0", "--replicas", node)
    assert moved.returncode == 0, moved.stderr
    assert json.loads(pykafka("topics", "reassign", "--list", "--output", "json").stdout) == []
    elsewhere = pykafka("topics", "reassign", topic, "--partition", "0", "--replicas", "42")
    assert elsewhere.returncode != 0 and "42" in one_error_line(elsewhere)
    nothing = pykafka("topics", "reassign", topic, "--partition", "0", "--cancel")
    assert nothing.returncode != 0 and "no reassignment" in one_error_line(nothing).lower()
