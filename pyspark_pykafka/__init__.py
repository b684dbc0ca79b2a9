"""Auto-registration of the ``pykafka`` Spark data source.

PySpark imports every installed top-level module whose name starts with ``pyspark_`` on its first data-source
lookup and registers the ``DefaultSource`` it finds, so ``spark.read.format("pykafka")`` works with no
``spark.dataSource.register(...)`` call once this distribution is installed where the Spark workers run.
Kept light: importing it loads only the source class (the readers and writers load on use).
"""

from __future__ import annotations

from spark_connector.source import KafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
