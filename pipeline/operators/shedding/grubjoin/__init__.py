"""GrubJoin's window harvesting (Gedik et al., TKDE §IV–V): the shedder (``shedder``),
the harvest plans (``plans``), the time correlations learned by window shredding
(``correlation``, Eqs. 1–4), the harvest-fraction solvers (``greedy``, Fig. 6, and the
exact ``bruteforce``, §IV-C), and the probe-share pricing when only some tuples probe
(``share``, ours).
"""

from pipeline.operators.shedding.grubjoin.shedder import GrubJoinShedder

__all__ = ["GrubJoinShedder"]
