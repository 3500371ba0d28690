"""`harvest bench selective [--quick]`: Gedik, Wu, Yu, Liu, "Adaptive load shedding for
windowed stream joins via selective processing" (CIKM) — its Figs. 3–9 on its own
workload (the overlap join of rotating-popularity item sets, `harvest produce overlap`),
two-way, through the GrubJoin shedder on the virtual CPU of `harvest bench grubjoin`,
each part against the paper's random drop in the same run.

Modules: :mod:`~bench.selective.sim` (one run; the configurations), :mod:`~bench.selective.
figures` (the parts), :mod:`~bench.selective.targets`, :mod:`~bench.selective.plot`,
:mod:`~bench.selective.main`.
"""

from bench.selective.main import PARTS, run

__all__ = ["PARTS", "run"]
