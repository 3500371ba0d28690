"""A Confluent-compatible Schema Registry: writer schemas by id, a subject's versions,
registration.

Wraps confluent-kafka's ``SchemaRegistryClient`` (any Confluent-compatible registry:
Confluent's own, Apicurio's ``/apis/ccompat/v7``, the client's in-process ``mock://``).
Subjects follow the TOPIC strategy, ``<topic>-value`` (:func:`value_subject`): the
client's default strategy asks an ``/associations`` endpoint Apicurio lacks. Every
request has a timeout, and a schema read by id is cached (ids are immutable).

Failures become harvest errors naming the registry URL: an id or subject the registry
does not know :class:`SchemaNotFoundError`, a schema the subject's compatibility rule
refuses (HTTP 409) :class:`SerializationError`, an unreachable registry or refused
credentials :class:`InfraError`.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import SecretStr

from pipeline.core.errors import ConfigError, InfraError, SchemaNotFoundError, SerializationError
from pipeline.core.secrets import ClientOptions
from pipeline.core.settings import Settings

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 10.0
_FIX_URL = ("set HARVEST_SCHEMA_REGISTRY_URL to a Confluent-compatible registry, or start "
            "the local one with `harvest registry up`")


def value_subject(topic: str) -> str:
    """The TOPIC strategy's subject of a topic's record values.

    >>> value_subject("orders")
    'orders-value'
    """
    return f"{topic}-value"


@dataclass(frozen=True)
class RegistryOptions:
    """Where the registry is and how to reach it."""

    url: str
    user_info: SecretStr | None = None
    #: PEM of the CA that signed an https registry's certificate
    ca_location: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://", "mock://")):
            raise ConfigError(f"HARVEST_SCHEMA_REGISTRY_URL: expected an http(s):// URL, got "
                              f"{self.url!r}")
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s: must be > 0, got {self.timeout_s}")

    @classmethod
    def from_settings(cls, settings: Settings) -> RegistryOptions:
        """The registry of the settings (or the local one `harvest registry up` recorded);
        :class:`ConfigError` when there is none."""
        url = settings.resolved_schema_registry_url()
        if url is None:
            raise ConfigError(f"HARVEST_SCHEMA_REGISTRY_URL: not set and no local registry "
                              f"runs: {_FIX_URL}")
        ca = settings.ssl_ca_location if url.startswith("https://") else None
        return cls(url=url, user_info=settings.schema_registry_user_info, ca_location=ca)

    def client_conf(self) -> ClientOptions:
        """The ``SchemaRegistryClient`` configuration (the user info masked in its repr)."""
        conf: dict[str, str | SecretStr] = {"url": self.url}
        if self.user_info is not None:
            conf["basic.auth.user.info"] = self.user_info
        if self.ca_location is not None:
            conf["ssl.ca.location"] = str(self.ca_location)
        return ClientOptions(conf)


@dataclass(frozen=True)
class SubjectVersion:
    """One registered version of a subject."""

    subject: str
    version: int
    schema_id: int
    schema_json: str

    @property
    def schema(self) -> dict[str, Any]:
        """The schema as a dict."""
        parsed: dict[str, Any] = json.loads(self.schema_json)
        return parsed


def _transport_errors() -> tuple[type[BaseException], ...]:
    """What the client raises when the registry does not answer: its HTTP library's
    errors (``httpx2``, httpx's successor, or ``httpx``, whichever it uses) and OSError."""
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return (module.HTTPError, OSError)
    return (OSError,)


def _new_client(options: RegistryOptions) -> Any:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    conf: dict[str, Any] = dict(options.client_conf())
    conf["timeout"] = options.timeout_s
    conf["max.retries"] = 1
    return SchemaRegistryClient.new_client(conf)


class SchemaRegistry:
    """Schemas of one registry; :meth:`writer_schema` caches by id."""

    def __init__(self, options: RegistryOptions, client: Any | None = None) -> None:
        self.options = options
        self.client = client if client is not None else _new_client(options)
        self._by_id: dict[int, str] = {}

    @property
    def url(self) -> str:
        return self.options.url

    def _call(self, what: str, call: Callable[[], T]) -> T:
        """Run one request, turning the client's failures into harvest errors."""
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            return call()
        except SchemaRegistryError as exc:
            status = exc.http_status_code
            if status == 404:
                raise SchemaNotFoundError(f"{what}: not in the registry at {self.url} "
                                          f"({exc.error_message})") from None
            if status == 409:
                raise SerializationError(f"{what}: the registry at {self.url} refuses it as "
                                         f"incompatible ({exc.error_message})") from None
            if status in (401, 403):
                raise InfraError(f"{what}: the registry at {self.url} refused the "
                                 f"credentials (HARVEST_SCHEMA_REGISTRY_USER_INFO): HTTP "
                                 f"{status}") from None
            raise InfraError(f"{what}: the registry at {self.url} answered HTTP {status}: "
                             f"{exc.error_message}") from None
        except _transport_errors() as exc:
            raise InfraError(f"{what}: the registry at {self.url} does not answer "
                             f"({type(exc).__name__}: {exc}); {_FIX_URL}") from None

    def writer_schema(self, schema_id: int) -> str:
        """The schema registered under ``schema_id`` (JSON text); cached."""
        known = self._by_id.get(schema_id)
        if known is not None:
            return known
        schema = self._call(f"schema id {schema_id}", lambda: self.client.get_schema(schema_id))
        if (schema.schema_type or "AVRO") != "AVRO":
            raise SerializationError(f"schema id {schema_id} is {schema.schema_type}, not Avro")
        text = str(schema.schema_str)
        self._by_id[schema_id] = text
        return text

    def versions(self, subject: str) -> list[SubjectVersion]:
        """Every version of ``subject``, oldest first."""
        numbers = self._call(f"subject {subject!r}", lambda: self.client.get_versions(subject))
        if not numbers:
            raise SchemaNotFoundError(f"subject {subject!r}: not in the registry at {self.url} "
                                      "(no versions)")
        return [self.version(subject, int(n)) for n in sorted(numbers)]

    def version(self, subject: str, version: int | str) -> SubjectVersion:
        """One version of ``subject`` (a number, or ``"latest"``)."""
        got = self._call(f"subject {subject!r} version {version}",
                         lambda: self.client.get_version(subject, version))
        text = str(got.schema.schema_str)
        self._by_id.setdefault(int(got.schema_id), text)
        return SubjectVersion(subject, int(got.version), int(got.schema_id), text)

    def latest(self, subject: str) -> SubjectVersion:
        """The newest version of ``subject``."""
        return self.version(subject, "latest")

    def register(self, subject: str, schema_json: str) -> int:
        """Register ``schema_json`` under ``subject`` (a no-op if it is there); its id."""
        from confluent_kafka.schema_registry import Schema

        schema = Schema(schema_json, "AVRO")
        schema_id = int(self._call(f"register under subject {subject!r}",
                                   lambda: self.client.register_schema(subject, schema)))
        self._by_id.setdefault(schema_id, schema_json)
        return schema_id
