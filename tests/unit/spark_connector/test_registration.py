"""Auto-registration: PySpark's own lookup (``pyspark.sql.worker.lookup_data_sources``, run by Spark in a
worker on the first data-source lookup) finds ``pyspark_pykafka.DefaultSource`` under the name "pykafka"."""

from __future__ import annotations

import io
import struct

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")


def test_sparks_lookup_finds_the_pykafka_source() -> None:
    from pyspark.sql.worker import lookup_data_sources

    import pyspark_pykafka
    from spark_connector.source import KafkaDataSource

    assert pyspark_pykafka.DefaultSource is KafkaDataSource
    out = io.BytesIO()
    lookup_data_sources._main(io.BytesIO(), out)  # what Spark runs: scan pyspark_* modules, write name -> class
    data = out.getvalue()
    (count,) = struct.unpack(">i", data[:4])
    names = []
    pos = 4
    for _ in range(count):
        (length,) = struct.unpack(">i", data[pos:pos + 4])
        names.append(data[pos + 4:pos + 4 + length].decode())
        pos += 4 + length
        (length,) = struct.unpack(">i", data[pos:pos + 4])  # the pickled class
        pos += 4 + length
    assert "pykafka" in names


def test_registration_module_is_light() -> None:
    import subprocess
    import sys

    # every pyspark_* module is imported by every lookup: importing ours must not load the readers or writers
    code = ("import sys, pyspark_pykafka; "
            "print(sorted(m for m in sys.modules if m.startswith('spark_connector')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['spark_connector', 'spark_connector.source']"
