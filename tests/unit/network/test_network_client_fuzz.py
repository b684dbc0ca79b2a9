"""Bad bytes from a broker never escape NetworkClient.poll: they close that connection only."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykafka_client.errors import ProtocolError
from pykafka_client.network.cluster_connection_states import ClusterConnectionStates
from tests.unit.network.harness import Harness


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=st.binary(max_size=64), keep_correlation=st.booleans())
def test_garbage_response_closes_only_that_connection(payload: bytes, keep_correlation: bool) -> None:
    h = Harness(n_nodes=2)
    h.await_ready(h.nodes[0])
    h.await_ready(h.nodes[1])
    req = h.send(h.nodes[0])
    h.send(h.nodes[1])
    h.poll()
    if keep_correlation:
        # A valid header for the request, followed by arbitrary bytes as the body.
        payload = req.correlation_id.to_bytes(4, "big", signed=True) + payload
    h.selector.unanswered("0")[0].answered = True
    h.selector.complete_receive("0", payload)
    from pykafka_client.protocol.messages import HeartbeatResponse

    h.selector.respond("1", HeartbeatResponse())
    responses = {r.destination: r for r in h.poll()}
    good = responses["1"]
    assert good.response_body is not None
    bad = responses.get("0")
    if bad is not None and bad.response_body is None:
        # Undecodable: the connection was closed with a protocol error.
        assert bad.was_disconnected and isinstance(bad.disconnect_exception, ProtocolError)
        assert h.client.connection_failed(h.nodes[0])
    assert not h.client.connection_failed(h.nodes[1])


@settings(max_examples=100, deadline=None)
@given(events=st.lists(st.sampled_from(["connect", "disconnect", "ready", "auth", "wait"]), max_size=40))
def test_connection_state_invariants(events: list[str]) -> None:
    import random

    states = ClusterConnectionStates(50, 1000, 10_000, 30_000, lambda h: ["10.0.0.1", "10.0.0.2"], random.Random(0))
    now = 0
    for ev in events:
        known = states.node_state("1") is not None
        if ev == "connect" and states.can_connect("1", now):
            states.connecting("1", now, "h")
            states.current_address("1")
        elif ev == "disconnect" and known:
            states.disconnected("1", now)
        elif ev == "ready" and states.is_preparing_connection("1"):
            states.ready("1")
        elif ev == "auth" and states.is_preparing_connection("1"):
            states.authentication_failed("1", now, None)
        else:
            now += 37
        delay = states.connection_delay("1", now)
        assert delay >= 0
        if known or states.node_state("1") is not None:
            backoff = states.reconnect_backoff_ms("1")
            assert 40 <= backoff <= 1000
            assert states.connection_setup_timeout_ms("1") <= 30_000
        if states.is_disconnected("1"):
            assert states.can_connect("1", now) == (delay == 0)
