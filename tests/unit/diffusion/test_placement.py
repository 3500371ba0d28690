"""Route-key placement without Spark (tests/integration/test_spark_placement.py checks it
against Spark): known Murmur3 values, one partition per instance, the instance number
recovered from the key."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.diffusion.placement import (
    check_keys,
    identity_keys,
    instance_of,
    partition_of,
    spark_hash_int,
    spread_keys,
)


def test_known_spark_hashes() -> None:
    # Spark: SELECT hash(0), hash(1), hash(-1), hash(42) (Murmur3_x86_32, seed 42)
    assert [spark_hash_int(v) for v in (0, 1, -1, 42)] == [
        933211791, -559580957, -1604776387, 29417773]
    # the collisions of the instance numbers as keys (the issue this placement fixes)
    assert partition_of(0, 2) == partition_of(1, 2) == 1
    assert partition_of(0, 4) == partition_of(1, 4) == partition_of(3, 4) == 3
    with pytest.raises(ConfigError, match="32-bit"):
        spark_hash_int(2**31)


@given(st.integers(1, 40), st.integers(1, 64))
def test_spread_keys_place_each_instance_once(groups: int, partitions: int) -> None:
    keys = spread_keys(groups, partitions)
    check_keys(keys, groups)
    assert [instance_of(k, groups) for k in keys] == list(range(groups))
    used = Counter(partition_of(k, partitions) for k in keys)
    if groups == 1:
        assert keys == (0,)
    elif partitions >= groups:
        assert len(used) == groups  # a partition of its own
    else:
        assert len(used) == partitions and max(used.values()) - min(used.values()) <= 1


def test_identity_keys_decode_to_themselves() -> None:
    assert identity_keys(3) == (0, 1, 2)
    assert [instance_of(k, 3) for k in identity_keys(3)] == [0, 1, 2]
    with pytest.raises(ConfigError, match="distinct"):
        check_keys((0, 0), 2)
    with pytest.raises(ConfigError, match="mod 2"):
        check_keys((1, 0), 2)
