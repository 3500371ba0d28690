"""The physical route keys of a job, kept with its checkpoint (ARCHITECTURE §6).

:func:`pipeline.diffusion.placement.spread_keys` gives every instance a key of its own
shuffle partition for the partition count ``P`` the stateful operator runs with. Spark
fixes ``P`` when a checkpoint is created and keeps it on every restart, and the join
state is stored under the key value, so a checkpoint must keep its keys for good. They
are chosen once, when the job starts on a new checkpoint, and written to
``<checkpoint>/harvest-route-keys.json`` (through Hadoop's file system, so any checkpoint
URL works); every later start reads them back. A checkpoint that already holds
micro-batches but no such file uses the instance numbers as keys and keeps them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pyspark.sql import SparkSession

from pipeline.core.errors import ConfigError
from pipeline.core.logging import get_logger
from pipeline.diffusion.placement import (
    check_keys,
    identity_keys,
    partition_of,
    spread_keys,
)

log = get_logger(__name__)

PLACEMENT_FILE = "harvest-route-keys.json"
Scheme = Literal["spread", "identity"]


@dataclass(frozen=True)
class Placement:
    """The route key of each instance (index = instance number) and the partition count
    they were chosen for."""

    groups: int
    partitions: int
    keys: tuple[int, ...]
    scheme: Scheme = "spread"

    def __post_init__(self) -> None:
        check_keys(self.keys, self.groups)

    @property
    def partitions_used(self) -> tuple[int, ...]:
        """The shuffle partition of each instance."""
        return tuple(partition_of(k, self.partitions) for k in self.keys)

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (the file's content)."""
        return {"groups": self.groups, "partitions": self.partitions,
                "keys": list(self.keys), "scheme": self.scheme}

    @classmethod
    def from_snapshot(cls, snap: dict[str, Any]) -> Placement:
        """Inverse of :meth:`snapshot`."""
        return cls(int(snap["groups"]), int(snap["partitions"]),
                   tuple(int(k) for k in snap["keys"]), snap.get("scheme", "spread"))


def new_placement(groups: int, partitions: int) -> Placement:
    """Every instance in a partition of its own (``partitions ≥ groups``)."""
    return Placement(groups, partitions, spread_keys(groups, partitions))


class _HadoopFiles:
    """Small text files and directory listings through the JVM's Hadoop file system."""

    def __init__(self, spark: SparkSession) -> None:
        self.jvm: Any = spark.sparkContext._jvm
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str) -> tuple[Any, Any]:
        p = self.jvm.org.apache.hadoop.fs.Path(path)
        return p, p.getFileSystem(self.conf)

    def read(self, path: str) -> str | None:
        p, fs = self._path(path)
        if not fs.exists(p):
            return None
        stream = fs.open(p)
        try:
            return str(self.jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def write(self, path: str, text: str) -> None:
        p, fs = self._path(path)
        out = fs.create(p, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def has_entries(self, folder: str) -> bool:
        p, fs = self._path(folder)
        return bool(fs.exists(p)) and len(fs.listStatus(p)) > 0


def checkpoint_placement(spark: SparkSession, checkpoint: str, groups: int) -> Placement:
    """The route keys of the query on ``checkpoint`` with ``groups`` instances: the ones
    recorded with it, the instance numbers for a checkpoint with micro-batches but no
    recorded placement, else new ones for the session's ``spark.sql.shuffle.partitions`` (recorded
    before the query starts). One instance: key 0, nothing recorded."""
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
    if groups == 1:
        return Placement(1, partitions, (0,))
    files = _HadoopFiles(spark)
    path = checkpoint.rstrip("/") + "/" + PLACEMENT_FILE
    text = files.read(path)
    if text is not None:
        try:
            placement = Placement.from_snapshot(json.loads(text))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}: unreadable route keys ({exc}); the checkpoint's "
                              "state is stored under them") from exc
        if placement.groups == groups:
            return placement
        log.warning("job.groups changed on this checkpoint: new route keys",
                    recorded=placement.groups, groups=groups)
        # Spark keeps running the checkpoint's partition count
        placement = new_placement(groups, placement.partitions)
    elif files.has_entries(checkpoint.rstrip("/") + "/offsets"):
        placement = Placement(groups, partitions, identity_keys(groups), "identity")
    else:
        placement = new_placement(groups, partitions)
    files.write(path, json.dumps(placement.snapshot()))
    log.info("route keys", groups=groups, partitions=placement.partitions,
             keys=list(placement.keys), scheme=placement.scheme,
             partitions_used=list(placement.partitions_used))
    return placement
