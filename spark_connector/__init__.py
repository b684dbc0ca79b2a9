"""PySpark Python Data Source for Kafka through pykafka_client (``spark.read.format("pykafka")``).

Read and write paths and the exactly-once sink: see docs/ARCHITECTURE.md, "The Spark connector".
"""
