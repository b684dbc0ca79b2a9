"""examples/spark_pipeline.py runs as documented on the shared session (it lives here, not in
tests/integration/examples, to use the one SparkSession of the run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


def test_spark_pipeline_example(spark: SparkSession, capsys: pytest.CaptureFixture[str]) -> None:
    from examples import spark_pipeline

    assert spark_pipeline.main(["--records", "300"], spark=spark) == 0
    out = capsys.readouterr().out
    assert "300 records written to example-spark-upper" in out
    assert "read_committed sees every input record exactly once: True" in out
