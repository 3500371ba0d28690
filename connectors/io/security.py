"""Telling apart "no broker", "not authenticated" and "not authorized" for librdkafka clients.

librdkafka reports a failed SASL handshake or TLS verification only through the client's
``error_cb`` while a metadata request just times out with "Broker transport failure".
:class:`ClientErrors` collects those callbacks; :func:`await_metadata` polls a client
for metadata in short steps and fails fast (well inside 30 s) with
:class:`KafkaAuthenticationError` when the broker rejected the credentials or the
certificate, and :func:`unreachable` builds the final error otherwise — naming a
plaintext client talking to a TLS/SASL listener (the broker accepts the TCP connection
but closes it during the Kafka handshake) as the authentication failure it is.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from pipeline.core.errors import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaUnavailableError,
)

Clock = Callable[[], float]

#: librdkafka error codes meaning "the broker refused who we are"
_AUTH_CODES = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL,
                         KafkaError.SASL_AUTHENTICATION_FAILED})
#: broker error codes meaning "authenticated, but the ACLs deny it"
AUTHZ_CODES = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
})
_HINT = ("set HARVEST_SECURITY_PROTOCOL, HARVEST_SASL_MECHANISM, HARVEST_SASL_USERNAME, "
         "HARVEST_SASL_PASSWORD and HARVEST_SSL_CA_LOCATION (for the local "
         "`harvest kafka up --secure` broker: `set -a; . .cache/kafka/clients/"
         "<principal>.env; set +a`)")


class ClientErrors:
    """A librdkafka ``error_cb`` that keeps the errors it is given (thread-safe).

    Pass the instance itself as ``error_cb``; callbacks run inside ``poll()`` /
    ``consume()`` / ``flush()`` of the client.
    """

    def __init__(self, keep: int = 20) -> None:
        self._lock = threading.Lock()
        self._keep = keep
        self.errors: list[KafkaError] = []
        self.auth: KafkaError | None = None
        self.authz: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        with self._lock:
            if len(self.errors) < self._keep:
                self.errors.append(error)
            if error.code() in _AUTH_CODES and self.auth is None:
                self.auth = error
            if error.code() in AUTHZ_CODES and self.authz is None:
                self.authz = error

    def raise_if_denied(self, bootstrap: str, config: Mapping[str, Any]) -> None:
        """Raise the authentication/authorization error seen so far, if any."""
        if self.auth is not None:
            raise authentication_error(bootstrap, config, self.auth.str())
        if self.authz is not None:
            raise authorization_error(config, self.authz.str())


def _who(config: Mapping[str, Any]) -> str:
    user = config.get("sasl.username")
    protocol = config.get("security.protocol", "PLAINTEXT")
    return f"as {user!r} over {protocol}" if user else f"over {protocol} without credentials"


def authentication_error(bootstrap: str, config: Mapping[str, Any],
                         reason: str) -> KafkaAuthenticationError:
    """The error for a client the broker at ``bootstrap`` did not accept."""
    return KafkaAuthenticationError(
        f"authentication failed at {bootstrap} ({_who(config)}): {reason}; {_HINT}"
    )


def authorization_error(config: Mapping[str, Any], reason: str,
                        action: str = "") -> KafkaAuthorizationError:
    """The error for an authenticated client that the ACLs refuse."""
    user = config.get("sasl.username") or "this client"
    what = f" to {action}" if action else ""
    return KafkaAuthorizationError(
        f"not authorized: principal {user!r} lacks the ACL{what}: {reason} "
        "(the local secure broker's principals and their ACLs: README, "
        "'Running against a secured Kafka')"
    )


def is_authorization_failure(exc: BaseException) -> KafkaError | None:
    """The :class:`KafkaError` inside ``exc`` if it is an ACL denial, else None."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(error, KafkaError) and error.code() in AUTHZ_CODES:
        return error
    return None


def _tcp_answers(bootstrap: str, timeout: float = 1.0) -> bool:
    """True when the first bootstrap address accepts a TCP connection."""
    first = bootstrap.split(",")[0].strip()
    first = first.split("://")[-1]
    host, _, port = first.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)),
                                      timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def unreachable(bootstrap: str, config: Mapping[str, Any], errors: ClientErrors | None,
                timeout: float, last: str) -> KafkaUnavailableError:
    """The error after ``timeout`` seconds without metadata: authentication when the
    callbacks said so or a plaintext client meets a listener that only closes the
    connection, else "no broker answered"."""
    if errors is not None and errors.auth is not None:
        return authentication_error(bootstrap, config, errors.auth.str())
    protocol = str(config.get("security.protocol", "PLAINTEXT")).upper()
    if _tcp_answers(bootstrap):
        if protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
            return authentication_error(
                bootstrap, config,
                f"the broker accepts TCP connections but closed each one during the Kafka "
                f"handshake, which is what a TLS/SASL listener does to a {protocol} client "
                f"(last error: {last})")
        return KafkaUnavailableError(
            f"Kafka at {bootstrap} accepts TCP connections but sent no metadata within "
            f"{timeout:g} s {_who(config)} (last error: {last}); is the security "
            f"configuration right? {_HINT}")
    return KafkaUnavailableError(
        f"no Kafka broker answered at {bootstrap} within {timeout:g} s ({last}); start one "
        "with `harvest kafka up` or set HARVEST_BOOTSTRAP_SERVERS"
    )


def await_metadata(client: Any, bootstrap: str, config: Mapping[str, Any],
                   errors: ClientErrors | None, timeout: float, *,
                   topic: str | None = None, step: float = 1.0,
                   clock: Clock = time.monotonic) -> Any:
    """``client.list_topics()`` retried in ``step``-second attempts for up to ``timeout``
    seconds, serving ``client.poll`` in between so ``errors`` sees the error callbacks.

    Raises :class:`KafkaAuthenticationError` as soon as an authentication error arrives,
    :class:`KafkaAuthorizationError` for an ACL denial and otherwise
    :func:`unreachable`'s error once ``timeout`` has passed.
    """
    start = clock()
    last = "no answer"
    poll = getattr(client, "poll", None)
    while True:
        remaining = timeout - (clock() - start)
        if remaining <= 0:
            raise unreachable(bootstrap, config, errors, timeout, last)
        try:
            if topic is None:
                return client.list_topics(timeout=max(0.1, min(step, remaining)))
            return client.list_topics(topic, timeout=max(0.1, min(step, remaining)))
        except KafkaException as exc:
            last = str(exc.args[0]) if exc.args else repr(exc)
            denied = is_authorization_failure(exc)
            if denied is not None:
                raise authorization_error(config, denied.str(), "describe the cluster") \
                    from exc
        if poll is not None:
            poll(0)
        if errors is not None:
            errors.raise_if_denied(bootstrap, config)
