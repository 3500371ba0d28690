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

* ``drain`` — the input is published before the query starts; the query drains it from
  the earliest offsets in micro-batches of a quarter of the backlog. Throughput = input
  records (each counted once) / busy time (the micro-batches that read input or wrote
  results: :mod:`bench.peer.runs`). The methods alternate (A B, then B A), after a
  warm-up run of each (the first query of a Spark session pays the JVM's warm-up); the
  best run of each is kept. Each row says whether its de-duplicated result set equals
  the other method's (``results_equal``) and the oracle's.
* ``floor`` — the read-and-decode floor (:mod:`pipeline.spark.floor`): the same backlog
  read through Spark's Kafka source, decoded and validated as both joins do, the rows
  discarded; ``floor.max_ratio`` = its rows/s over the built-in join's (from ``drain``),
  the most any join that reads this way can reach against the built-in one.
* ``overhead`` — near-empty micro-batches: 2 tuples/s per stream of the equi workload,
  published in real time with a 1 s trigger; ``batch_overhead_ms`` is the median
  duration of the batches with input (the first three left out), with Spark's
  ``durationMs`` breakdown, the state operators' commit / update / removal time
  (``state_ms_p50``) and the median of the no-data batches that ran meanwhile
  (``empty_batch_ms_p50``); alternated, best of the repeats.
* ``streaming`` — per workload, the drain input replayed in real time at the built-in
  join's measured capacity (1×): p50/p99 result latency of both methods over the steady
  span (20–90 % of the completions).
* ``scaling`` — the band backlog drained by harvest with 1 and 2 route keys on
  ``local[2]`` (one shuffle partition per route key), alternated, best of the repeats;
  ``replication`` = routed rows / input rows (ATR copies); the UI's REST API gives the
  keyed stage's task times, and ``overlap`` how long both instances ran at once.
* ``cluster`` — the same with 2 and 4 route keys on a standalone cluster of two workers
  with one core each (started and stopped by the bench; not in ``--quick``).

Writes ``bench/results/peer.json`` and ``peer.png``. ``parts`` says when each part last
ran and whether at the ``--quick`` sizes (``workloads`` holds both sizes' setups;
``quick`` is true when every part was quick); ``scaling_cluster`` says why there are no
cluster rows, if there are none.

Not a paper's figure: a peer comparison with Spark's own stream-stream join on the exact
(unshed) m-way window join. Modules: :mod:`~bench.peer.setup` (workloads, specs, one
query), :mod:`~bench.peer.runs` (driving and measuring a query), :mod:`~bench.peer.parts`
(the parts above), :mod:`~bench.peer.report` (targets, summary), :mod:`~bench.peer.plot`,
:mod:`~bench.peer.main` (the run).
"""

from bench.peer.main import PARTS, run

__all__ = ["PARTS", "run"]
