"""Telling "no broker" from "not authenticated" / "not authorized" (librdkafka clients)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException

from connectors.io.security import (
    ClientErrors,
    authorization_error,
    is_authorization_failure,
    unreachable,
)
from pipeline.core.errors import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaUnavailableError,
)

SASL = {"security.protocol": "SASL_SSL", "sasl.username": "reader", "sasl.password": "pw"}


@pytest.fixture
def listener() -> Iterator[str]:
    """A TCP port that accepts connections (and would close them, like a TLS listener)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def dead_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def test_client_errors_keep_the_first_auth_and_acl_errors() -> None:
    errors = ClientErrors()
    errors(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    errors.raise_if_denied("b:1", SASL)  # nothing decisive yet
    errors(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: bad"))
    with pytest.raises(KafkaAuthenticationError, match=r"as 'reader' over SASL_SSL.*bad"):
        errors.raise_if_denied("b:1", SASL)
    acl = ClientErrors()
    acl(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed"))
    with pytest.raises(KafkaAuthorizationError, match="principal 'reader'"):
        acl.raise_if_denied("b:1", SASL)


def test_a_plaintext_client_at_a_listener_that_closes_is_an_authentication_failure(
        listener: str) -> None:
    error = unreachable(listener, {}, ClientErrors(), 10.0, "transport failure")
    assert isinstance(error, KafkaAuthenticationError)
    assert "authentication failed" in str(error) and "without credentials" in str(error)
    assert "HARVEST_SECURITY_PROTOCOL" in str(error)


def test_no_listener_means_no_broker(dead_port: str) -> None:
    error = unreachable(dead_port, SASL, ClientErrors(), 10.0, "transport failure")
    assert type(error) is KafkaUnavailableError
    assert "no Kafka broker answered" in str(error) and "harvest kafka up" in str(error)


def test_secrets_stay_out_of_the_messages(listener: str) -> None:
    for error in (unreachable(listener, SASL, None, 1.0, "x"),
                  authorization_error(SASL, "denied", "write to t")):
        assert "pw" not in str(error).replace("HARVEST_SASL_PASSWORD", "")


def test_authorization_failures_are_recognized_in_exceptions() -> None:
    denied = KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED, "no PID"))
    assert is_authorization_failure(denied) is not None
    assert is_authorization_failure(KafkaException(KafkaError(KafkaError._TRANSPORT))) is None
    assert is_authorization_failure(ValueError("x")) is None
