"""``./dev``'s editable install shows the packages to tools that list sys.path rather than import (issue 22 items
1 and 3): PySpark's data-source lookup (``pkgutil.iter_modules``, finds ``pyspark_pykafka``) and mypy checking a
program outside the repository. setuptools' import-hook editable install hid them from both."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.packaging.installs import ROOT, run

pytestmark = pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(), reason="checks ./dev's .venv (run with .venv/bin/python)"
)


def test_pyspark_lookup_lists_the_data_source_module(tmp_path: Path) -> None:
    listed = run(sys.executable, "-c", "import pkgutil; print(sorted(m.name for m in pkgutil.iter_modules()))",
                 cwd=tmp_path)
    for module in ("pyspark_pykafka", "pykafka_client", "spark_connector", "mini_broker"):
        assert repr(module) in listed, f"{module} is not on sys.path of .venv's python: {listed[-2000:]}"


def test_mypy_finds_the_packages_for_a_program_outside_the_repository(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text("import mini_broker\nimport pykafka_client\nimport spark_connector\n")
    run(sys.executable, "-m", "mypy", "--strict", "--follow-imports=skip", "--cache-dir", tmp_path / "cache",
        "--no-error-summary", program, cwd=tmp_path)
