"""`harvest bench peer [--quick]`: harvest's join against Spark's built-in stream-stream
joins, on the same topics, spec and ``local[2]`` session.

Workloads (3 streams, exponential delays, K = the largest delay, shedding off, so both
methods must give the exact answer):

* ``equi`` — 10,000 uniform keys, 1 s windows, 60,000 tuples per stream (1,000/s for
  60 s of stream time); harvest: hash routing over 2 route keys;
* ``band`` — the sensor streams, ``|a_i − a_j| ≤ ε`` (ε = 0.1), 10 s windows, 24,000
  tuples per stream (100/s for 240 s); harvest: ATR over 2 route keys with segments of a
  quarter of the stream; the built-in join equi-joins on ``⌊a/ε⌋`` with every later
  stream exploded to the neighbouring buckets, then filters the exact band
  (:mod:`pipeline.spark.builtin_join`).

Parts (``--only`` runs some of them and merges them into the existing ``peer.json``):

* ``drain`` — the long drains (:mod:`bench.peer.scale`): ≥ 1.2 M input rows of each
  workload published before the query starts, drained in 24 micro-batches by harvest,
  the built-in join on its in-memory store and (equi) on RocksDB, the read-and-decode
  floor (:mod:`pipeline.spark.floor`: read, decode, validate, rows discarded) and
  ``raw-read`` (Spark's Kafka source alone); each twice in rotating order. Rows carry
  ``steady_rows_per_s`` (input rows over busy time, the first two batches left out),
  ``batches`` and ``state_store``; ``profile`` splits a row's time by differences
  between the methods and harvest's own phase timers; ``fixed_ms`` the per-batch costs.
* ``startup`` — the short drains (four micro-batches, start-up included): both joins,
  alternated, best of two (``startup``).
* ``overhead`` — near-empty micro-batches: 2 tuples/s per stream of the equi workload,
  published in real time with a 1 s trigger; ``batch_overhead_ms`` is the median
  duration of the batches with input (the first three left out), with Spark's
  ``durationMs`` breakdown, the state operators' commit / update / removal time
  (``state_ms_p50``) and the median of the no-data batches that ran meanwhile
  (``empty_batch_ms_p50``); alternated, best of the repeats.
* ``latency`` — after ``drain`` (:mod:`bench.peer.latency`): the equi input replayed in
  real time at 0.5×, 0.8× and 1.0× of each join's steady capacity, and harvest at 0.8×
  the built-in's: p50/p99 result latency over the steady span.
* ``scaling`` — the long equi drain by harvest with 1 and 2 route keys on ``local[2]``
  (one shuffle partition per route key), alternated, best of the repeats;
  ``replication`` = routed rows / input rows (ATR copies); the UI's REST API gives the
  keyed stage's task times (``stage_max_task_s``: its own speed-up) and ``overlap``.
* ``cluster`` — the band short drain with 2 and 4 route keys on a standalone cluster of
  two workers with one core each (started and stopped by the bench; not in ``--quick``).

Writes ``bench/results/peer.json`` and ``peer.png``. ``parts`` says when each part last
ran and whether at the ``--quick`` sizes (``workloads`` holds both sizes' setups;
``quick`` is true when every part was quick); ``scaling_cluster`` says why there are no
cluster rows, if there are none.

Not a paper's figure: a peer comparison with Spark's own stream-stream join on the exact
(unshed) m-way window join. Modules: :mod:`~bench.peer.setup` (workloads, specs, one
query), :mod:`~bench.peer.runs` (driving and measuring a query), :mod:`~bench.peer.scale`
(the long drains and their profile), :mod:`~bench.peer.latency` (the sweep),
:mod:`~bench.peer.parts` (the other parts), :mod:`~bench.peer.report` (targets,
``targets_missed_why``, summary), :mod:`~bench.peer.plot`, :mod:`~bench.peer.main`.
"""

from bench.peer.main import PARTS, run

__all__ = ["PARTS", "run"]
