"""The ``shop.Order`` Avro record in two versions, for the tests of the Confluent wire
format and schema evolution against a registry (confluent-kafka's ``mock://`` one and a
real one): v2 adds a field with a default and drops ``note``, a backward-compatible
change."""

from __future__ import annotations

from typing import Any

__all__ = ["V1", "V2"]

V1: dict[str, Any] = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "price", "type": "double"},
               {"name": "note", "type": "string"}]}
#: v2 adds a field with a default and drops ``note``
V2: dict[str, Any] = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "price", "type": "double"},
               {"name": "region", "type": "string", "default": "eu"}]}
