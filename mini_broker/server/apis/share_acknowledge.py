"""ShareAcknowledge (key 79, KIP-932): acknowledge records acquired through ShareFetch, in an open share session
(epoch 0 cannot open one here: INVALID_SHARE_SESSION_EPOCH); epoch -1 closes the session after the
acknowledgements, releasing what the member still holds. Per partition: INVALID_RECORD_STATE for records the
member does not hold (its lock expired), UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.share_api_util import acknowledge, share_partitions, share_request_error
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.share.partition_manager import FINAL_EPOCH, INITIAL_EPOCH, SessionError
from pykafka_client.errors import InvalidShareSessionEpochError, TopicAuthorizationFailedError, UnknownTopicIdError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ShareAcknowledgeRequest, ShareAcknowledgeResponse

Response = ShareAcknowledgeResponse


def handle(apis: KafkaApis, request: Request) -> ShareAcknowledgeResponse:
    body = request.body
    assert isinstance(body, ShareAcknowledgeRequest)
    refused = share_request_error(apis, request, body.group_id, body.member_id)
    if refused is not None:
        return Response(error_code=refused[0], error_message=refused[1])
    group_id, member_id = str(body.group_id), str(body.member_id)
    if body.share_session_epoch == INITIAL_EPOCH:
        return Response(error_code=InvalidShareSessionEpochError.code,
                        error_message="ShareAcknowledge cannot open a share session (epoch 0): open it with ShareFetch")
    partitions = share_partitions(apis)
    try:
        partitions.session(group_id, member_id, body.share_session_epoch, ())
    except SessionError as e:
        return Response(error_code=e.code, error_message=str(e))
    metadata = apis.broker.metadata_cache
    auth = apis.broker.auth(request)
    topics: list[Response.ShareAcknowledgeTopicResponse] = []
    for topic in body.topics:
        md = metadata.topic_by_id(topic.topic_id)
        readable = md is not None and bool(auth.topics(AclOperation.READ, [md.name]))
        out = []
        for p in topic.partitions:
            message: str | None
            if md is None:
                code, message = int(UnknownTopicIdError.code), f"no topic has id {topic.topic_id}"
            elif not readable:
                code, message = int(TopicAuthorizationFailedError.code), f"READ on topic {md.name} is not allowed"
            else:
                code, message = acknowledge(partitions, group_id, member_id, (topic.topic_id, p.partition_index),
                                            p.acknowledgement_batches)
            out.append(Response.PartitionData(partition_index=p.partition_index, error_code=code,
                                              error_message=message))
        topics.append(Response.ShareAcknowledgeTopicResponse(topic_id=topic.topic_id, partitions=out))
    if body.share_session_epoch == FINAL_EPOCH:
        partitions.close_session(group_id, member_id)
    return Response(error_code=0, responses=topics)


API = ApiSpec(ApiKey.SHARE_ACKNOWLEDGE, 0, 1, handle)
