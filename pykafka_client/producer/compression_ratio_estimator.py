"""Per-topic estimate of the compression ratio (Java ``CompressionRatioEstimator``): a new batch is sized
with it; it moves towards each encoded batch's observed ratio, slowly when compression improves and fast when
it deteriorates."""

from __future__ import annotations

from pykafka_client.producer.producer_batch import ProducerBatch

COMPRESSION_RATIO_IMPROVING_STEP = 0.005
COMPRESSION_RATIO_DETERIORATE_STEP = 0.05


class CompressionRatioEstimator:
    """topic -> estimated compression ratio (1.0 until a compressed batch of the topic was encoded)."""

    def __init__(self) -> None:
        self._ratios: dict[str, float] = {}

    def estimation(self, topic: str) -> float:
        return self._ratios.get(topic, 1.0)

    def set_estimation(self, topic: str, ratio: float) -> None:
        self._ratios[topic] = ratio

    def update_estimation(self, batch: ProducerBatch) -> None:
        """After a batch was encoded: move the topic's estimate towards the observed ratio (Java
        ``CompressionRatioEstimator.updateEstimation``)."""
        if not batch.is_compressed:
            return
        topic = batch.topic_partition.topic
        observed = batch.actual_compression_ratio
        current = self._ratios.get(topic, 1.0)
        if observed > current:
            self._ratios[topic] = max(current + COMPRESSION_RATIO_DETERIORATE_STEP, observed)
        elif observed < current:
            self._ratios[topic] = max(current - COMPRESSION_RATIO_IMPROVING_STEP, observed)
