"""The names a spec may use: Kafka topic names, Avro names, and the reserved names a
stream or attribute may not shadow (the fields of a ``join_result`` record, the keys of
a dump line)."""

from __future__ import annotations

import re

#: Kafka's topic-name characters
TOPIC_PATTERN = r"^[A-Za-z0-9._-]+$"
#: the fields of a ``join_result`` record: a stream name may not shadow one
RESULT_FIELDS = ("id", "result_time", "members", "instance", "emit_time")
#: the keys of a dump line besides the attributes: an attribute name may not shadow one
DUMP_KEYS = ("stream", "seq", "event_time", "arrival_time", "partition", "offset", "payload")
_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_avro_name(name: str) -> bool:
    """True iff ``name`` is a valid Avro name (``[A-Za-z_][A-Za-z0-9_]*``)."""
    return bool(_AVRO_NAME.match(name))
