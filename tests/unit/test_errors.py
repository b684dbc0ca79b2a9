from __future__ import annotations

import pytest

from pykafka_client import errors
from pykafka_client.errors_base import BrokerResponseError


def test_every_code_maps_to_a_class_with_that_code() -> None:
    assert len(errors.BROKER_ERRORS) > 120
    for code, cls in errors.BROKER_ERRORS.items():
        assert cls.code == code
        assert issubclass(cls, BrokerResponseError)
        assert cls.name.isupper()


def test_retriable_and_invalid_metadata_flags_match_the_class_hierarchy() -> None:
    for cls in errors.BROKER_ERRORS.values():
        assert cls.retriable == issubclass(cls, errors.RetriableError), cls
        assert cls.invalid_metadata == issubclass(cls, errors.InvalidMetadataError), cls
    assert errors.NotLeaderOrFollowerError.invalid_metadata
    assert errors.CoordinatorNotAvailableError.retriable
    assert not errors.CoordinatorNotAvailableError.invalid_metadata
    assert not errors.TopicAuthorizationFailedError.retriable


def test_raise_for_code() -> None:
    errors.raise_for_code(0)
    with pytest.raises(errors.UnknownTopicOrPartitionError) as info:
        errors.raise_for_code(3, "topic x")
    assert "UNKNOWN_TOPIC_OR_PARTITION" in str(info.value) and "topic x" in str(info.value)
    with pytest.raises(errors.UnknownServerError, match="unknown error code 4242"):
        errors.raise_for_code(4242)
    assert errors.for_code(4242) is errors.UnknownServerError


def test_all_names_every_public_error_class() -> None:
    """``__all__`` lists every error class the module offers (mypy --strict only sees names in it)."""
    public = {
        name
        for name, value in vars(errors).items()
        if not name.startswith("_") and isinstance(value, type) and issubclass(value, BaseException)
    }
    assert public <= set(errors.__all__), sorted(public - set(errors.__all__))
    assert len(errors.__all__) == len(set(errors.__all__))
    for name in errors.__all__:
        assert hasattr(errors, name), name


#: Kafka 4.1's Errors for the codes the share APIs (KIP-932) and their neighbours use: (code, name, retriable)
#: as Java's exception classes make them (a RetriableException subclass is retriable).
KAFKA_41_CODES_120_133 = [
    (120, "TRANSACTION_ABORTABLE", False),
    (121, "INVALID_RECORD_STATE", False),
    (122, "SHARE_SESSION_NOT_FOUND", True),
    (123, "INVALID_SHARE_SESSION_EPOCH", True),
    (124, "FENCED_STATE_EPOCH", False),
    (125, "INVALID_VOTER_KEY", False),
    (126, "DUPLICATE_VOTER", False),
    (127, "VOTER_NOT_FOUND", False),
    (128, "INVALID_REGULAR_EXPRESSION", False),
    (129, "REBOOTSTRAP_REQUIRED", False),
    (130, "STREAMS_INVALID_TOPOLOGY", False),
    (131, "STREAMS_INVALID_TOPOLOGY_EPOCH", False),
    (132, "STREAMS_TOPOLOGY_FENCED", False),
    (133, "SHARE_SESSION_LIMIT_REACHED", True),
]


@pytest.mark.parametrize(("code", "name", "retriable"), KAFKA_41_CODES_120_133)
def test_codes_120_to_133_are_kafka_41s(code: int, name: str, retriable: bool) -> None:
    cls = errors.BROKER_ERRORS[code]
    assert (cls.code, cls.name, cls.retriable) == (code, name, retriable)
    assert errors.for_code(code) is cls


def test_share_session_limit_reached_is_raised_by_its_own_class() -> None:
    with pytest.raises(errors.ShareSessionLimitReachedError) as info:
        errors.raise_for_code(133)
    assert isinstance(info.value, errors.RetriableError)
