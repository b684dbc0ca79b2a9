"""The README's quickstart code runs as printed (against a MiniBroker instead of localhost:9092)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[3] / "README.md"


def test_quickstart_runs(capsys: pytest.CaptureFixture[str]) -> None:
    section = README.read_text().split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    source = code.group(1)
    assert 'BOOTSTRAP = "localhost:9092"' in source
    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as broker:
        source = source.replace('"localhost:9092"', repr(broker.bootstrap_servers))
        exec(compile(source, str(README), "exec"), {"__name__": "quickstart"})
    out = capsys.readouterr().out
    assert "written to partition" in out
    assert "hello 9" in out and "last one" in out
    assert "ListOffsetsResultInfo(offset=" in out
