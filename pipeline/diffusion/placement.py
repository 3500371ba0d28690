"""Where the route keys run: one Spark shuffle partition per instance (ARCHITECTURE §6).

Spark places a group of ``groupBy(route_key)`` in shuffle partition
``pmod(hash(route_key), P)``: ``hash`` is Murmur3_x86_32 with seed 42 over the 4 bytes of
the int (``HashPartitioning``), ``P`` the stateful operator's partition count
(``spark.sql.shuffle.partitions`` when its checkpoint was created). With the instance
number itself as the key, instances collide: ``pmod(hash(k), 2)`` is 1 for both k = 0
and k = 1, so two route keys run one after the other in one task.

:func:`spread_keys` picks, for every instance ``i`` of ``G``, a *physical key* whose
partition is ``i mod P``, so with ``P ≥ G`` every instance has a partition of its own
(and with ``P < G`` the instances share the partitions evenly). The physical key of
instance ``i`` is always ``≡ i (mod G)``: the processor recovers the instance number
as ``key mod G`` (:func:`instance_of`) without a lookup table, and the identity keys
(``k = i``, what a checkpoint without a placement file holds) decode the same way.

Plain Python, no Spark: ``tests/integration`` checks :func:`spark_hash_int` and the
placement against Spark itself.

>>> spark_hash_int(0), spark_hash_int(1)
(933211791, -559580957)
>>> spread_keys(2, 2)
(2, 1)
>>> [partition_of(k, 2) for k in spread_keys(2, 2)]
[0, 1]
>>> [instance_of(k, 2) for k in spread_keys(2, 2)]
[0, 1]
"""

from __future__ import annotations

from pipeline.core.errors import ConfigError

#: Spark's ``hash()`` / ``HashPartitioning`` seed
SPARK_HASH_SEED = 42
_M32 = 0xFFFFFFFF
#: how far :func:`spread_keys` searches per instance (each step has probability 1/P)
_MAX_STEPS = 1 << 20


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def spark_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash(CAST(value AS INT))``: Murmur3_x86_32 ``hashInt`` (signed 32-bit)."""
    if not -(1 << 31) <= value < (1 << 31):
        raise ConfigError(f"route key {value} does not fit a 32-bit int")
    k1 = (value & _M32) * 0xCC9E2D51 & _M32
    k1 = _rotl32(k1, 15) * 0x1B873593 & _M32
    h1 = (seed & _M32) ^ k1
    h1 = (_rotl32(h1, 13) * 5 + 0xE6546B64) & _M32
    h1 ^= 4  # the length in bytes
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _M32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_of(key: int, partitions: int) -> int:
    """The shuffle partition of route key ``key``: ``pmod(hash(key), partitions)``."""
    if partitions < 1:
        raise ConfigError(f"job.shuffle_partitions: must be >= 1, got {partitions}")
    return spark_hash_int(key) % partitions


def spread_keys(groups: int, partitions: int) -> tuple[int, ...]:
    """The physical route key of each instance 0..G−1: the smallest ``k ≡ i (mod G)``,
    ``k ≥ 0``, in partition ``i mod P`` not taken by an earlier instance. One instance:
    key 0 (its partition does not matter)."""
    if groups < 1:
        raise ConfigError(f"job.groups: must be >= 1, got {groups}")
    if partitions < 1:
        raise ConfigError(f"job.shuffle_partitions: must be >= 1, got {partitions}")
    if groups == 1:
        return (0,)
    keys: list[int] = []
    for i in range(groups):
        target = i % partitions
        k = i
        for _ in range(_MAX_STEPS):
            if partition_of(k, partitions) == target:
                break
            k += groups
        else:  # pragma: no cover - Murmur3 reaches every residue long before
            raise ConfigError(f"no route key for instance {i} in partition {target} of "
                              f"{partitions}")
        keys.append(k)
    return tuple(keys)


def identity_keys(groups: int) -> tuple[int, ...]:
    """The placement before :func:`spread_keys`: instance ``i`` is key ``i`` (checkpoints
    written that way keep it)."""
    return tuple(range(groups))


def instance_of(key: int, groups: int) -> int:
    """The instance number of physical route key ``key`` (≥ 0): ``key mod G``."""
    return key % groups


def check_keys(keys: tuple[int, ...], groups: int) -> None:
    """A placement must give instance ``i`` a distinct key ``≡ i (mod G)``, ``≥ 0``."""
    if len(keys) != groups or len(set(keys)) != groups or any(
            k < 0 or k % groups != i for i, k in enumerate(keys)):
        raise ConfigError(f"route keys {list(keys)}: need {groups} distinct keys >= 0, "
                          f"key i ≡ i (mod {groups})")
