"""The NetworkClient's per-request shortcuts the producer's I/O thread takes, each against the call it saves: a produce
request encoded straight by the kernel (``encode_request_frame``'s dispatch without its call), a response completed
without ``InFlightRequest.completed``, the node's versions read from ``ApiVersions.by_node``, the channel's readiness
read from its state, and the metadata updater's rebootstrap question answered from ``Metadata.attempt_start_ms``."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from pykafka_client.network.api_versions import ApiVersions
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.metadata_updater import DefaultMetadataUpdater, MetadataRecoveryStrategy
from pykafka_client.network.node_api_versions import NodeApiVersions
from pykafka_client.network.request_encoding import compiled_codecs, encode_request_frame
from pykafka_client.producer.sender import DrainedProduceRequest
from pykafka_client.protocol.messages import HeartbeatResponse
from pykafka_client.protocol.records import _native
from pykafka_client.structs import TopicPartition
from tests.doubles.frames import frame_bytes
from tests.unit.network.harness import Harness

PARTS = [(TopicPartition("a", 0), b"x" * 61), (TopicPartition("b", 3), b"y" * 7), (TopicPartition("a", 1), b"z" * 20)]


def _request() -> DrainedProduceRequest:
    return DrainedProduceRequest.of("txn", -1, 30000, list(PARTS))


class _Declining:
    """A kernel that declines every produce request (the reference encodes them), counting what it was asked."""

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self.asked = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)

    def encode_produce_request(self, *args: Any) -> None:
        self.asked += 1
        return None


@pytest.mark.parametrize("kernel", ["loaded", "declining", "none"])
def test_a_produce_request_frame_is_the_reference_frame(kernel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whoever encodes it (the kernel directly, the reference after the kernel declined, the reference alone), the
    frame written is the reference encoder's of the same request."""
    loaded = _native.loaded_kernel()
    if kernel != "none" and loaded is None:
        pytest.skip("the compiled record kernel is not built")
    declining = _Declining(loaded)
    monkeypatch.setattr(_native, "kernel", {"loaded": loaded, "declining": declining, "none": None}[kernel])
    if kernel == "declining":  # (the producer's request type's compiled encoder, registered with the loaded kernel's)
        monkeypatch.setitem(compiled_codecs().encoders, DrainedProduceRequest, declining.encode_produce_request)
    h = Harness()
    h.await_ready()
    request = h.client.new_client_request(h.node.id_string, _request(), h.now, True, oldest_allowed_version=3)
    h.client.send(request, h.now)
    h.poll()
    sent = h.selector.completed_send_buffers[-1]
    version = h.selector.sent_requests[-1].api_version
    monkeypatch.setattr(_native, "kernel", None)
    reference = _request()
    reference.topic_data  # noqa: B018 - built from the parts: the reference encoder's request
    assert sent == frame_bytes(encode_request_frame(reference, version, request.correlation_id, request.client_id))
    assert declining.asked == (1 if kernel == "declining" else 0)


def test_a_response_completes_as_its_in_flight_request_would() -> None:
    h = Harness()
    h.await_ready()
    h.send()
    in_flight = h.client.in_flight_requests.oldest(h.node.id_string)
    h.poll()
    h.selector.respond(h.node.id_string, HeartbeatResponse())
    h.time.sleep(5)
    [response] = h.poll()
    expected = in_flight.completed(response.response_body, h.now)
    assert isinstance(response.response_body, HeartbeatResponse)
    assert [getattr(response, f.name) for f in fields(ClientResponse)] == [getattr(expected, f.name) for f in fields(ClientResponse)]


def test_api_versions_by_node_is_a_read_only_view_of_get() -> None:
    versions = ApiVersions()
    view = versions.by_node
    one = NodeApiVersions.create()
    versions.update("1", one)
    assert view.get("1") is versions.get("1") is one and view.get("2") is versions.get("2") is None
    versions.remove("1")
    assert view.get("1") is None
    with pytest.raises(TypeError):
        view["3"] = one  # type: ignore[index]


def test_the_updater_asks_rebootstrap_as_the_metadata_does() -> None:
    metadata = Metadata()
    updater = DefaultMetadataUpdater(metadata, None, 1000, 50, MetadataRecoveryStrategy.REBOOTSTRAP)  # type: ignore[arg-type]

    def same(now: int, trigger: int) -> bool:
        answer = updater.needs_rebootstrap(now, trigger)
        assert answer == metadata.needs_rebootstrap(now, trigger)
        return answer

    assert not same(10**9, 0)
    metadata.attempt_started(100)
    metadata.attempt_started(200)  # the run of attempts began at 100
    assert not same(400, 300) and same(401, 300) and not same(100, 0)
    metadata.rebootstrap()
    assert not same(10**9, 0)


def test_a_channel_is_ready_for_the_selector_only_in_state_ready() -> None:
    from tests.unit.network.transport.test_selector import Harness as SelectorHarness

    h = SelectorHarness()
    try:
        h.add("a")
        assert h.selector.is_channel_ready("a")
        channel = h.selector.channel("a")
        assert channel is not None
        channel.begin_reauthentication()  # state AUTHENTICATE
        assert not channel.ready() and not h.selector.is_channel_ready("a")
        assert not h.selector.is_channel_ready("nobody")
    finally:
        h.close()
