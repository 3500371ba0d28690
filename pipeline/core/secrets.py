"""Client options that carry secrets, and scrubbing secrets out of text.

Kafka client settings (librdkafka's ``sasl.password``, the Java clients'
``sasl.jaas.config``) must reach the client libraries as plain strings, but must never
show up in a log line, a report, an exception message or a ``repr``. A
:class:`ClientOptions` is an ordinary read-only ``Mapping[str, str]`` for the code that
hands it to a client, whose ``repr``/``str`` masks every secret value; :func:`scrub`
replaces known secret values in free text (e.g. an error message from a JVM).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

from pydantic import SecretStr

#: option keys (librdkafka and Kafka Java client names) whose values are secrets
SECRET_KEYS = frozenset({
    "sasl.password",
    "sasl.jaas.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "basic.auth.user.info",
})
MASK = "**********"
_JAAS_PASSWORD = re.compile(r'password="((?:[^"\\]|\\.)*)"')


def is_secret_key(key: str) -> bool:
    """True for an option whose value is a secret (also with Spark's ``kafka.`` prefix)."""
    return key.removeprefix("kafka.") in SECRET_KEYS


class ClientOptions(Mapping[str, str]):
    """A read-only mapping of client options; secret values are kept as ``SecretStr``.

    Iterating and indexing give the plain values (what a client needs); ``repr``/``str``
    and :meth:`redacted` mask the secrets.

    >>> opts = ClientOptions({"security.protocol": "SASL_SSL", "sasl.password": "pw"})
    >>> opts["sasl.password"], repr(opts)
    ('pw', "ClientOptions({'security.protocol': 'SASL_SSL', 'sasl.password': '**********'})")
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, str | SecretStr] | None = None) -> None:
        self._values: dict[str, str | SecretStr] = {}
        for key, value in (values or {}).items():
            if isinstance(value, SecretStr) or not is_secret_key(key):
                self._values[key] = value
            else:
                self._values[key] = SecretStr(value)

    def __getitem__(self, key: str) -> str:
        value = self._values[key]
        return value.get_secret_value() if isinstance(value, SecretStr) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def redacted(self) -> dict[str, str]:
        """A plain dict with every secret value masked (safe to log)."""
        return {k: MASK if isinstance(v, SecretStr) else v for k, v in self._values.items()}

    def secrets(self) -> list[str]:
        """The secret values themselves, and the passwords inside JAAS configurations
        (for :func:`scrub`)."""
        out = [v.get_secret_value() for v in self._values.values() if isinstance(v, SecretStr)]
        return out + [m.group(1) for v in out for m in _JAAS_PASSWORD.finditer(v)]

    def __repr__(self) -> str:
        return f"ClientOptions({self.redacted()!r})"

    __str__ = __repr__


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each (non-empty) secret replaced by a mask."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
