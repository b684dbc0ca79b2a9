"""The README's "Async" examples run as printed (asyncio, then trio), against a MiniBroker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_async_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    section = README.read_text().split("## Async\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    assert "asyncio.run(main())" in blocks[0] and "trio.run(main)" in blocks[1]
    with MiniBroker({"group.initial.rebalance.delay.ms": 0}) as broker:
        for source in blocks:
            assert 'BOOTSTRAP = "localhost:9092"' in source
            source = source.replace('"localhost:9092"', repr(broker.bootstrap_servers))
            exec(compile(source, str(README), "exec"), {"__name__": "readme_async"})
    out = capsys.readouterr().out
    assert "written to partition" in out and "hello 9" in out
    assert "trio wrote offset 10" in out
