"""Topic names (ARCHITECTURE §7); topic creation lives in :mod:`connectors.io.admin`.

``<prefix>.in.<workload>.<stream>`` per input stream, ``<prefix>.results``,
``<prefix>.metrics`` and ``<prefix>.deadletter``. Every name is checked against Kafka's
rules (``[A-Za-z0-9._-]``, at most 249 characters, not ``.`` or ``..``).
"""

from __future__ import annotations

import re

from pipeline.core.errors import ConfigError

#: the Avro schema of each harvest workload's records (the wire contract of its topics)
WORKLOAD_SCHEMAS: dict[str, str] = {
    "sensors": "sensor_reading",
    "equi": "sensor_reading",
    "positions": "sensor_reading",
    "news": "news_item",
    "overlap": "item_set",
    "overlap-equi": "item_set",
}

_LEGAL = re.compile(r"^[A-Za-z0-9._-]+$")
_MAX_LEN = 249


def validate_topic(name: str) -> str:
    """Return ``name`` if Kafka accepts it as a topic name, else raise :class:`ConfigError`."""
    if not name or name in (".", ".."):
        raise ConfigError(f"topic: invalid topic name {name!r}")
    if len(name) > _MAX_LEN:
        raise ConfigError(f"topic: name of {len(name)} characters exceeds {_MAX_LEN}: {name!r}")
    if not _LEGAL.match(name):
        raise ConfigError(f"topic: {name!r} may only contain letters, digits, '.', '_' and '-'")
    return name


def _part(kind: str, value: str) -> str:
    """One dot-separated component of a topic name: legal characters and no dot."""
    if not value or "." in value or not _LEGAL.match(value):
        raise ConfigError(
            f"{kind}: {value!r} must be non-empty and contain only letters, digits, '_' or '-'"
        )
    return value


def _prefix(prefix: str) -> str:
    if not prefix or not _LEGAL.match(prefix) or prefix.startswith(".") or prefix.endswith("."):
        raise ConfigError(f"topic_prefix: invalid topic prefix {prefix!r}")
    return prefix


def input_topic(prefix: str, workload: str, stream: str) -> str:
    """``<prefix>.in.<workload>.<stream>``: the topic of one input stream."""
    name = f"{_prefix(prefix)}.in.{_part('workload', workload)}.{_part('stream', stream)}"
    return validate_topic(name)


def input_topic_pattern(prefix: str, workload: str) -> str:
    """A regex (Kafka ``subscribePattern``) matching every input topic of ``workload``."""
    return f"^{re.escape(_prefix(prefix))}\\.in\\.{re.escape(_part('workload', workload))}\\..+$"


def parse_input_topic(prefix: str, topic: str) -> tuple[str, str]:
    """Inverse of :func:`input_topic`: ``(workload, stream)``."""
    head = f"{_prefix(prefix)}.in."
    rest = topic[len(head):].split(".") if topic.startswith(head) else []
    if len(rest) != 2 or not all(rest):
        raise ConfigError(
            f"topic: {topic!r} is not an input topic <{prefix}>.in.<workload>.<stream>"
        )
    return rest[0], rest[1]


def results_topic(prefix: str) -> str:
    """``<prefix>.results``: join results (``join_result`` records)."""
    return validate_topic(f"{_prefix(prefix)}.results")


def metrics_topic(prefix: str) -> str:
    """``<prefix>.metrics``: operator metrics (``operator_metrics`` records)."""
    return validate_topic(f"{_prefix(prefix)}.metrics")


def deadletter_topic(prefix: str) -> str:
    """``<prefix>.deadletter``: undecodable or rejected records (``dead_letter``)."""
    return validate_topic(f"{_prefix(prefix)}.deadletter")


def schema_for(workload: str) -> str:
    """The Avro schema name of a harvest workload's records.

    >>> schema_for("news")
    'news_item'
    """
    try:
        return WORKLOAD_SCHEMAS[workload]
    except KeyError:
        raise ConfigError(
            f"workload: unknown workload {workload!r}; expected one of {list(WORKLOAD_SCHEMAS)}"
        ) from None
