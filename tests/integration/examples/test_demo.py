"""The README's first command runs examples/demo.py: keep it working (small workload here)."""

from __future__ import annotations

import pytest

from examples import demo


@pytest.mark.integration
def test_demo_produces_and_consumes_every_record_exactly_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--records", "3000", "--partitions", "3", "--consumers", "2"]) == 0
    out = capsys.readouterr().out
    assert "(a separate process)" in out
    assert "every record exactly once: True" in out
    assert "in order within each partition: True" in out
