"""The README's first command, ``./dev demo``, runs ``python -m examples.demo`` from the repository root:
keep that working (small workload here)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.integration.examples.test_examples import DEMO, ROOT


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_demo_as_dev_demo_runs_it() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "examples.demo", *DEMO.args],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(a separate process)" in proc.stdout
    assert "every record exactly once: True;  in order within each partition: True" in proc.stdout
