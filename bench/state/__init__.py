"""`harvest bench state`: what one micro-batch's state save costs, whole blob vs incremental.

Workload: the demo's join (``examples/specs/demo.toml``: 3-way band join, quality-driven
K with Γ = 0.95, 2 s basic windows) at 1,200 tuples/s per stream, one route key, 1 s
micro-batches, exponential delays, with windows of 10, 60 and 300 s. So that the join's
own cost stays affordable at 300 s and the run is deterministic, shedding is off, the
values drift (seconds + noise) and ε is tiny (10⁻⁶) with ``[join] index = true``: a probe
touches one or two basic windows. None of this changes what the state holds (every
tuple of the window with its feature, its Kafka coordinates in the member store, the
K-slack buffers, the Synchronizer, the policy's delay statistics).

Per window size: the join windows and the member store are pre-filled with W seconds of
tuples (unprobed), a few micro-batches settle K-slack and the policy, then micro-batches
are measured. Each batch goes through the real :class:`~pipeline.spark.processor.JoinProcessor`
(incremental layout, live-instance cache on, as in a job), and the same instance is then
also saved by a blob-layout processor, so both designs save the same state. The state
handle is an in-memory stand-in that counts the bytes it is handed (keys and values —
what RocksDB's changelog receives); the serialization is the real one.

Reported per (design, window): bytes written and CPU milliseconds spent in the save
(serialization + state calls; ``time.process_time``, as the wall clock of a shared 2-core
machine mostly measures the other processes — it is kept per batch as ``save_wall_ms``)
per micro-batch, the median over the measured batches.
Target (#21): with the incremental layout, bytes and save time per micro-batch at 300 s
stay within 2× of those at 10 s (the blob grows with the window).

Parts (``--only processor,spark``; a partial run merges into the existing JSON):
``processor`` is the above; ``spark`` confirms it in a real Spark run at one window size
(:mod:`bench.state.spark`: bytes of the RocksDB changelog files per micro-batch).

Not a paper's figure: the cost of the state layouts of the job's instance (a whole blob
against incremental pieces) as the window grows. Modules: :mod:`~bench.state.workload`
(spec, streams, micro-batches), :mod:`~bench.state.handle` (the counting state handle),
:mod:`~bench.state.processor` (the processor part), :mod:`~bench.state.spark` (the Spark
part), :mod:`~bench.state.report` (rows, growth, targets, table, PNG),
:mod:`~bench.state.main` (the run).
"""

from bench.state.main import PARTS, run

__all__ = ["PARTS", "run"]
