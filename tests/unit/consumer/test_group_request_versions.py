"""Group requests narrowed or adapted to the version the NetworkClient negotiates (Java's request builders)."""

from __future__ import annotations

from pykafka_client.consumer.group_rebalance_config import STATIC_MEMBERSHIP_OLDEST_VERSION, GroupRebalanceConfig
from pykafka_client.consumer.offset_response_handlers import REQUIRE_STABLE_OLDEST_VERSION, offset_fetch_request
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages.offset_fetch_request import OffsetFetchRequest
from pykafka_client.structs import TopicPartition


def test_a_static_member_may_not_send_group_requests_older_than_kip_345() -> None:
    static = GroupRebalanceConfig(group_id="g", group_instance_id="i-1")
    dynamic = GroupRebalanceConfig(group_id="g")
    for api, version in STATIC_MEMBERSHIP_OLDEST_VERSION.items():
        assert static.oldest_allowed_version(api) == version
        assert dynamic.oldest_allowed_version(api) is None
    assert static.oldest_allowed_version(ApiKey.FIND_COORDINATOR) is None


def test_offset_fetch_asks_for_stable_offsets_and_drops_the_flag_where_the_version_lacks_it() -> None:
    request = offset_fetch_request("g", [TopicPartition("t", 1), TopicPartition("t", 0)])
    assert request.require_stable
    plain = OffsetFetchRequest(group_id="g", topics=request.topics)
    for version in range(0, REQUIRE_STABLE_OLDEST_VERSION):
        assert request.encode(version) == plain.encode(version)
    stable = request.encode(REQUIRE_STABLE_OLDEST_VERSION)
    assert OffsetFetchRequest.decode(stable, REQUIRE_STABLE_OLDEST_VERSION).require_stable


def test_list_offsets_is_never_sent_below_the_version_that_means_what_the_consumer_asks() -> None:
    from pykafka_client.consumer.offset_fetcher import MAX_TIMESTAMP, oldest_list_offsets_version

    assert oldest_list_offsets_version(0, [-1, -2]) == 0  # latest / earliest: any version
    assert oldest_list_offsets_version(1, [-1]) == 2  # read_committed needs the isolation level (v2)
    assert oldest_list_offsets_version(0, [1_700_000_000_000]) == 1  # by timestamp: v0 answers something else
    assert oldest_list_offsets_version(0, [MAX_TIMESTAMP, -1]) == 7  # KIP-734
