"""The project's exception hierarchy: one root, one subclass per kind of failure.

Every message says what was wrong and with which value.
"""

from __future__ import annotations


class HarvestError(Exception):
    """Root of every error raised on purpose by harvest."""


class ConfigError(HarvestError):
    """An invalid CLI value, spec key or setting. The CLI maps it to exit code 2."""


class SerializationError(HarvestError):
    """Bytes that cannot be encoded or decoded as one of our Avro records."""


class SchemaNotFoundError(SerializationError):
    """A single-object-encoded record whose fingerprint matches no known schema."""


class KafkaUnavailableError(HarvestError):
    """The broker cannot be reached, or did not come up in time."""


class KafkaAuthenticationError(KafkaUnavailableError):
    """The broker answers but does not accept this client: no or wrong SASL credentials,
    a TLS certificate it cannot verify, or a plaintext client on a TLS/SASL listener."""


class KafkaAuthorizationError(HarvestError):
    """The broker authenticated the client but its ACLs deny what it tried to do."""


class DeliveryError(HarvestError):
    """Records that the producer could not deliver."""


class InfraError(HarvestError):
    """Missing Java, Maven, jars, or a local service that failed to start."""


class SetupRequiredError(InfraError):
    """What `harvest setup` installs (the broker or connector jars) is missing. The CLI
    maps it to exit code 2 and says to run `harvest setup`."""


class OperatorStateError(HarvestError):
    """An operator snapshot that cannot be restored."""


class OperatorInputError(HarvestError):
    """A value handed to an operator outside its contract (a negative delay, a stream
    index out of range, arrays of mismatched length): the caller's data is wrong, not
    the spec."""


class TopicError(HarvestError):
    """A Kafka topic that cannot be created, or did not become ready in time."""


class JobFailedError(HarvestError):
    """The Spark streaming query stopped with an error (the message carries Spark's)."""


class FastPathError(SerializationError):
    """A batch the vectorized Avro encoder cannot encode exactly as the reference encoder
    would; the serde falls back to per-record encoding (which names a bad record)."""
