"""The header-version caches hold only versions a message defines: a peer sending made-up versions (the broker
parses every request's header with this code) cannot grow them."""

from __future__ import annotations

from pykafka_client.protocol import headers
from pykafka_client.protocol.api_keys import ApiKey


def test_made_up_versions_are_answered_but_not_cached() -> None:
    before = (len(headers._REQUEST_HEADER_VERSIONS), len(headers._RESPONSE_HEADER_VERSIONS))
    for version in range(1000, 3000):
        assert headers.request_header_version(int(ApiKey.METADATA), version) == 2
        assert headers.response_header_version(int(ApiKey.METADATA), version) == 1
    assert (len(headers._REQUEST_HEADER_VERSIONS), len(headers._RESPONSE_HEADER_VERSIONS)) == before
    assert headers.request_header_version(int(ApiKey.METADATA), 12) == 2
    assert (int(ApiKey.METADATA), 12) in headers._REQUEST_HEADER_VERSIONS
