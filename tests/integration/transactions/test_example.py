"""examples/exactly_once_copy.py runs as documented (its own mini_broker process) and shows what it claims."""

from __future__ import annotations

import pytest

from examples import exactly_once_copy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_exactly_once_copy_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert exactly_once_copy.main(["--records", "600"]) == 0
    out = capsys.readouterr().out
    assert "first copier: committed 100 records, then crashed with 100 records in an open transaction" in out
    assert "restarted copier: 600 records copied in all" in out
    assert "read_committed sees every input record exactly once: True" in out
    assert "read_uncommitted also sees the 100 records of the aborted transaction" in out
