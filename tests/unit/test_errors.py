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
