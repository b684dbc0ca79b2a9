"""ElectLeaders (key 43, KIP-460): elect partition leaders now, preferred (the first replica, when it is alive and
in the ISR) or unclean (a leaderless partition gets any alive replica). ALTER on the cluster is needed (else
CLUSTER_AUTHORIZATION_FAILED for the whole request). Per partition: ELECTION_NOT_NEEDED when the leader already
is the one asked for, PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica qualifies,
UNKNOWN_TOPIC_OR_PARTITION; null partitions means every partition, and then only the elected ones are listed.
"""

from __future__ import annotations

import logging

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_message
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import ClusterAuthorizationFailedError, InvalidRequestError
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ElectLeadersRequest, ElectLeadersResponse

log = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1


def code_and_message(e: KafkaError | None) -> tuple[int, str | None]:
    if e is None:
        return 0, None
    if isinstance(e, BrokerResponseError):
        return e.code, error_message(e)
    return -1, str(e)


def handle(apis: KafkaApis, request: Request) -> ElectLeadersResponse:
    body = request.body
    assert isinstance(body, ElectLeadersRequest)
    if not apis.broker.auth(request).cluster(AclOperation.ALTER):
        return ElectLeadersResponse(throttle_time_ms=0, error_code=ClusterAuthorizationFailedError.code,
                                    replica_election_results=[])
    # v0 has no election type: preferred
    election = body.election_type if request.context.api_version >= 1 else PREFERRED
    if election not in (PREFERRED, UNCLEAN):
        return ElectLeadersResponse(throttle_time_ms=0, error_code=InvalidRequestError.code,
                                    replica_election_results=[])
    wanted = None if body.topic_partitions is None else [
        (t.topic, p) for t in body.topic_partitions for p in t.partitions]
    out = apis.broker.replica_manager.replication.elect_leaders(election == UNCLEAN, wanted)
    by_topic: dict[str, list[ElectLeadersResponse.PartitionResult]] = {}
    for (topic, p), err in out.items():
        code, msg = code_and_message(err)
        by_topic.setdefault(topic, []).append(
            ElectLeadersResponse.PartitionResult(partition_id=p, error_code=code, error_message=msg))
        if err is None:
            log.info("event=leader_elected partition=%s-%d unclean=%s", topic, p, election == UNCLEAN)
    return ElectLeadersResponse(throttle_time_ms=0, error_code=0, replica_election_results=[
        ElectLeadersResponse.ReplicaElectionResult(topic=t, partition_result=r) for t, r in by_topic.items()])


API = ApiSpec(ApiKey.ELECT_LEADERS, 0, 2, handle)
