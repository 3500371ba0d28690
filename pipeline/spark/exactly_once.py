"""Exactly-once output: ``[output] delivery = "exactly-once"`` (ARCHITECTURE §4).

One transactional producer on the driver, in ``foreachBatch``
(:class:`connectors.io.transactional.TransactionalSink`):

* Its ``transactional.id`` is ``harvest-<query id>``. Spark keeps the query id in the
  checkpoint, so a restarted job gets the same id: its ``init_transactions`` fences the
  crashed driver's producer and aborts the transaction that one left open, and
  read_committed consumers are no longer held back by it.
* Each micro-batch's output rows — results, metrics and dead letters alike — and a
  commit record ``{"batch_id": N}`` (key = query id) in ``<results topic>.commits`` are
  written in one transaction.
* On its first batch the writer reads back the last committed batch id. A batch at or
  below it was committed before the crash but not yet recorded in Spark's checkpoint:
  it is skipped *without running it*, so the state version that the committed output
  came from (written by the crashed run, which finished computing the batch before it
  committed) stays the state the next batch starts from; re-running it could e.g. fire
  an idle-flush timer the first run had not, and emit results that would then be
  dropped. (Spark ≥ 4.1 checks that every state store of a foreachBatch micro-batch
  committed; that check, ``spark.sql.streaming.stateStore.commitValidation.enabled``, is
  switched off, since not running such a batch is the point here.)

The batch runs in one action (``DataFrame.toArrow``: the rows come to the driver as
Arrow binary columns, already Avro-encoded by Spark SQL's ``to_avro``); a second action
would run the stateful join a second time. So a micro-batch's output must fit in the
driver's memory; ``[job] max_offsets_per_trigger`` bounds it.

Test hook: ``HARVEST_TEST_SINK_STALL=open:<file>`` makes the first transaction with at
least two records stop after ``begin_transaction`` and half of its records (flushed to
the broker), ``committed:<file>`` the first transaction right after its commit (before
Spark records the batch in the checkpoint); either then creates ``<file>`` and sleeps
until the process is killed (the file holds the pid and the batch id).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from connectors.io.topics import validate_topic
from connectors.io.transactional import BatchWrite, TransactionalConfig, TransactionalSink
from pipeline.core.errors import ConfigError, JobFailedError
from pipeline.core.logging import get_logger

log = get_logger(__name__)

STALL_ENV = "HARVEST_TEST_SINK_STALL"
#: Spark ≥ 4.1 fails a foreachBatch micro-batch in which not every state store committed
COMMIT_VALIDATION = "spark.sql.streaming.stateStore.commitValidation.enabled"
_STAGES = ("open", "committed")


def commits_topic(results_topic: str) -> str:
    """The topic of the commit records: ``<results topic>.commits``."""
    return validate_topic(f"{results_topic}.commits")


@dataclass(frozen=True)
class ExactlyOnceConfig:
    """What the driver's transactional producer needs (besides the query id)."""

    bootstrap: str
    commits_topic: str
    transaction_timeout_ms: int = 60_000
    #: librdkafka security settings (``Settings.kafka_client_config()``)
    client_config: Mapping[str, str] = field(default_factory=dict)

    def sink_config(self, query_id: str) -> TransactionalConfig:
        return TransactionalConfig(
            bootstrap=self.bootstrap, transactional_id=f"harvest-{query_id}",
            commits_topic=self.commits_topic, sink_id=query_id,
            client_config=self.client_config,
            transaction_timeout_ms=self.transaction_timeout_ms)


def _stall_hook() -> tuple[str, Path] | None:
    raw = os.environ.get(STALL_ENV)
    if not raw:
        return None
    stage, _, path = raw.partition(":")
    if stage not in _STAGES or not path:
        raise ConfigError(f"{STALL_ENV}: expected open:<file> or committed:<file>, got {raw!r}")
    return stage, Path(path)


def _stall(marker: Path, batch_id: int) -> None:
    marker.write_text(json.dumps({"pid": os.getpid(), "batch_id": batch_id}))
    log.warning("test hook: sink stalled until killed", marker=str(marker), batch_id=batch_id)
    while True:
        time.sleep(1.0)


class BatchWriter:
    """The ``foreachBatch`` function: one transaction per micro-batch (see the module)."""

    def __init__(self, config: ExactlyOnceConfig) -> None:
        self.config = config
        self.sink: TransactionalSink | None = None
        #: every transaction this writer committed
        self.writes: list[BatchWrite] = []
        self.skipped: list[int] = []
        self._query_id: str | None = None
        self._bound = threading.Event()
        self._stall = _stall_hook()

    def bind(self, query_id: str) -> None:
        """The query id (from ``writeStream.start()``) names the transactional id."""
        self._query_id = query_id
        self._bound.set()

    def _open(self) -> TransactionalSink:
        if self.sink is None:
            if not self._bound.wait(600.0) or self._query_id is None:
                raise JobFailedError("exactly-once sink: the query id never arrived")
            sink = TransactionalSink(self.config.sink_config(self._query_id))
            sink.open()
            self.sink = sink
        return self.sink

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        sink = self._open()
        if sink.last_committed is not None and batch_id <= sink.last_committed:
            log.info("micro-batch already committed to Kafka; skipped", batch_id=batch_id,
                     last_committed=sink.last_committed)
            self.skipped.append(batch_id)
            return
        table: Any = df.toArrow()  # the one action: the stateful join runs once
        if table.num_rows == 0:
            return
        topics = table.column("topic").to_pylist()
        keys = table.column("key").to_pylist()
        values = table.column("value").to_pylist()
        if self._stall is not None and self._stall[0] == "open" and len(values) >= 2:
            half = len(values) // 2
            sink.begin()
            sink.send(topics[:half], keys[:half], values[:half])
            sink.flush()
            _stall(self._stall[1], batch_id)
        write = sink.write(batch_id, topics, keys, values)
        self.writes.append(write)
        log.debug("micro-batch committed", batch_id=batch_id, records=write.records,
                  seconds=round(write.seconds, 4), commit_s=round(write.commit_seconds, 4))
        if self._stall is not None and self._stall[0] == "committed":
            _stall(self._stall[1], batch_id)

    def close(self) -> None:
        """Close the producer (aborting a transaction still open)."""
        if self.sink is not None:
            self.sink.close()
            self.sink = None


def start_exactly_once_sink(rows: DataFrame, *, checkpoint: str, trigger_ms: int,
                            query_name: str, config: ExactlyOnceConfig
                            ) -> tuple[StreamingQuery, BatchWriter]:
    """Start the query writing its ``(topic, key, value)`` rows transactionally."""
    writer = BatchWriter(config)
    # A batch already in Kafka is deliberately not run (its state was committed by the run
    # that wrote it), so Spark's check that every state store of a foreachBatch batch
    # committed must be off. Spark reads it from the session while the query runs, so it
    # stays off for the session; it concerns foreachBatch queries only, and this sink is
    # harvest's only one.
    rows.sparkSession.conf.set(COMMIT_VALIDATION, "false")
    query = (
        rows.select("topic", "key", "value")
        .writeStream.queryName(query_name)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .trigger(processingTime=f"{trigger_ms} milliseconds")
        .foreachBatch(writer)
        .start()
    )
    writer.bind(str(query.id))
    return query, writer
