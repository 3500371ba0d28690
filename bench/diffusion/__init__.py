"""`harvest bench diffusion`: Gu et al.'s load diffusion (ICDCS) on a virtual cluster.

G join hosts run in one process (:mod:`bench.diffusion.cluster`); a workload is routed in
trigger-sized micro-batches, each host joins its share in turn, and the per (host,
batch) CPU time, cost units, tuples received, intermediate tuples shipped (CTR) and
state give the asynchronous rate (each host queues its own input: the paper's model),
the batch rate (Spark's per-batch barrier), scaling with G, imbalance and replication
(:mod:`bench.diffusion.measures`), on CPU time, on cost units and on the paper's
simulation costs (two readings of its probe). Every run is checked against the oracle.
Parts (``--only``): ``calibrate, scaling, skew, streams, windows, selectivity, bursty,
routing_cost, paper_scale, spark_e2e`` (the last runs the Spark e2e test of adaptive ATR,
:mod:`bench.diffusion.spark_e2e`; ``--quick`` leaves it out unless named); results
in ``bench/results/diffusion.json`` and ``diffusion_*.png``.
"""
