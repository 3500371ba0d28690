"""`harvest bench chaos [--quick]`: the job under a schedule of faults on a three-node
Kafka cluster, checked against the oracle.

The demo workload (nonaligned sensors, the demo spec with ``bench pipeline``'s 60 s
window and ε, shedding off, K = the largest generated delay so the results are exact) is
produced paced in real time by `harvest produce` (acks=all, idempotent) to a local
three-node cluster (`harvest kafka up --brokers 3`, replication 3, min.insync.replicas 2,
under its own HARVEST_CACHE_DIR so a running single broker is left alone), and joined by
`harvest submit` with exactly-once output (master ``local[2,4]``: a failed task is tried
again). While it runs, a schedule of faults fires (:mod:`bench.chaos.plan`), each kind at
least twice in the full run:

* ``input_leader``: SIGKILL of the node leading an input partition, started again after
  :data:`~bench.chaos.plan.NODE_DOWN_S`;
* ``results_leader``: the same for the node leading the results partition;
* ``python_worker``: SIGKILL of one of the job's PySpark worker processes (the task it ran
  fails and Spark runs it again);
* ``driver``: SIGKILL of the whole `harvest submit` process group (driver and JVM); the
  bench starts it again on the same checkpoint, as a supervisor (systemd, Kubernetes)
  would — ``--max-restarts`` restarts a failed query inside a live driver, not a dead one.

Per fault ``{kind, at_s, recovered_s}``: ``at_s`` from the start of the input,
``recovered_s`` until the next micro-batch Spark committed (a new file in the
checkpoint's ``commits/``). For the run: ``records_lost`` (generated records missing from
the input topics), ``duplicates_read_committed`` (results a read_committed consumer sees
more than once), ``results_equal_oracle`` (the distinct results are exactly the oracle's
over the input topics' records), ``faults_survived`` (faults followed by a committed
micro-batch, the job ending cleanly) and ``faults``. Targets: ``faults_survived ==
faults`` (≥ 8 in the full run), nothing lost, no duplicate, equal to the oracle, and the
median ``recovered_s`` of the broker faults ≤ 2 × the trigger.

The rate is :data:`~bench.chaos.plan.LOAD` of what the Spark job works off (the median
of the last :data:`~bench.chaos.plan.HISTORY` runs' measurements, ``job_rate_history``
of ``chaos.json``: records read per second of micro-batch time while the producer ran,
:mod:`~bench.chaos.capacity`), so that the job is busy about that share of every
trigger. Two parts (``--only faults,at_capacity``, merged into the existing JSON):
``faults``, the run at :data:`~bench.chaos.plan.LOAD`, whose body is the top of
``chaos.json``, and ``at_capacity``, the same run at 1× the demo's capacity (the full
join's per-stream capacity as `harvest bench soak` measured it, the issue's "1×
capacity" read literally; else 1× the job's rate), under ``at_capacity`` with targets of
its own and ``chaos_at_capacity.png``.
Without a measurement the rate is a third of the full join's per-stream capacity as
`harvest bench soak` measured it (``soak.json``), else
:data:`~bench.chaos.plan.RATE_PER_STREAM`. The JSON records ``input_rate_per_stream``,
``capacity`` (what the rate was based on, the job's rate measured in this run and how)
and ``load`` (the rate against the job's measured rate: the share of the run the job was
busy). The operator's capacity is the join instance's alone; beside the producer and
three brokers on two cores the whole job works off about a third of it (docs/NOTES.md).
A micro-batch reads at most :data:`~bench.chaos.plan.CATCH_UP_TRIGGERS` triggers of input
(``[job] max_offsets_per_trigger``), so a restarted driver's backlog is read in batches
that commit one after the other. Writes ``bench/results/chaos.json`` and
``chaos.png``. Modules: :mod:`~bench.chaos.plan` (what runs), :mod:`~bench.chaos.faults`
(the injections), :mod:`~bench.chaos.recovery` (commit times → ``recovered_s``),
:mod:`~bench.chaos.capacity` (the job's rate), :mod:`~bench.chaos.report` (JSON, PNG),
:mod:`~bench.chaos.main` (the run).
"""
