"""PySpark Python Data Source for Kafka through pykafka_client (``spark.read.format("pykafka")``).

Planned; see the roadmap in docs/ARCHITECTURE.md.
"""
