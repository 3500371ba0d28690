"""pipeline.spark.decode.DecodeConfig: bad wiring is a ConfigError naming the values."""

from __future__ import annotations

import json

import pytest

from pipeline.core.errors import ConfigError
from pipeline.spark.decode import DecodeConfig

SCHEMA = json.dumps({"type": "record", "name": "r", "fields": [
    {"name": "stream", "type": "string"}, {"name": "seq", "type": "long"},
    {"name": "event_time", "type": "long"}, {"name": "arrival_time", "type": "long"},
    {"name": "value", "type": "double"}]})


def _config(fingerprint: bytes = b"\x00" * 8, topics: tuple[str, ...] = ("t1", "t2")
            ) -> DecodeConfig:
    return DecodeConfig("r", SCHEMA, fingerprint, ("s1", "s2"), topics)


def test_valid_config_round_trips() -> None:
    cfg = _config()
    assert DecodeConfig.from_snapshot(cfg.snapshot()) == cfg
    assert cfg.attribute_names == ("value",)


def test_fingerprint_must_be_8_bytes() -> None:
    with pytest.raises(ConfigError, match=r"expected 8 bytes, got 3 \('c30102'\)"):
        _config(fingerprint=b"\xc3\x01\x02")


def test_one_topic_per_stream() -> None:
    with pytest.raises(ConfigError, match=r"got 1 topics \['t1'\] for 2 streams \['s1', 's2'\]"):
        _config(topics=("t1",))
