"""`harvest bench soak [--minutes 20]`: a long run at overload, watched for growth.

The demo workload (nonaligned sensors, the demo spec with ``bench pipeline``'s 60 s
window and ε) at 2× the full join's measured capacity (:mod:`pipeline.app.capacity`),
GrubJoin on the wall budget, real Kafka + Spark (``local[2]``, one route key), input
paced in real time for ``minutes``. Every few seconds the bench samples the query's
progress and the processes' resident memory; per minute of the run it records

* ``input_rate`` / ``output_rate``: input rows read and results written per wall second
  (the batches that completed in that minute; speed-up 1, so wall ≈ stream time);
* ``batch_ms_p50``: the median duration of those micro-batches;
* ``state_mb``: the state per instance as last saved to the state store — header plus
  every stored piece (``operator_metrics`` extra ``state_bytes``), the last report of the
  minute, averaged over the instances; beside it ``state_tuples`` (tuples held: windows,
  K-slack, Synchronizer) and ``state_sst_mb`` (the RocksDB SST files of the operator per
  instance, Spark's ``rocksdbSstFileSize``: a sawtooth with compactions, not the state);
* ``driver_rss_mb``: the driver, the Python process plus its JVM; ``worker_rss_mb``: every
  Python process under the JVM (the PySpark daemon and its workers), the minute's median.
  The driver JVM's heap is committed and touched at start (``-Xms`` = ``-Xmx``,
  ``-XX:+AlwaysPreTouch``), so its RSS grows only with what the heap does not hold
  (metaspace, threads, direct buffers), not with the JVM's lazy commit of a fixed heap.
  The JVM runs with NMT (``-XX:NativeMemoryTracking=summary``), sampled once a minute:
  ``jvm_nmt_mb`` is what NMT tracks, ``jvm_untracked_mb`` the rest of the JVM's RSS
  (RocksDB's and other JNI mallocs, glibc arenas), and ``jvm_native_growth_mb`` the NMT
  categories that moved from minute 5 to the end (code cache, metaspace, threads, …);
* ``z_p50`` / ``dropped_rate``: GrubJoin's throttle fraction (median of the minute's
  adaptation steps) and the arrivals its input queue dropped per second.

``state_growth`` and ``rss_growth`` are the relative change from minute 5 to the last
minute, ``output_drift`` the mean output rate of the last 5 minutes against minutes 5–10
(minus 1). Targets (``targets_met``): growth under 5% for state and RSS, drift within
±10%. The machine's load average is recorded beside them (the run shares the machine).
Writes ``bench/results/soak.json`` and ``soak.png``.

Not a paper's figure: a stability check (bounded state and memory, steady output) of the
GrubJoin-shed job (Gedik et al., GrubJoin, TKDE) under sustained overload. Modules:
:mod:`~bench.soak.sampling` (the watch loop's samples), :mod:`~bench.soak.memory` (RSS,
NMT), :mod:`~bench.soak.rows` (per-minute rows, growth, targets), :mod:`~bench.soak.report`
(JSON, PNG), :mod:`~bench.soak.main` (the run), :mod:`~bench.soak.compare` (GrubJoin vs
tail drop, ``python -m bench.soak.compare``).
"""

from bench.soak.main import run

__all__ = ["run"]
