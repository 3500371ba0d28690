"""The CPU budget sources behind the throttle (ARCHITECTURE §5; GrubJoin §IV-A): one
:class:`Budget` protocol (``protocol``) reporting a :class:`BudgetReading` every Δ
(``reading``); the deterministic virtual CPU (``virtual_cpu``) and the wall clock
(``wall``: ``WallBudget`` and the input queue bounded in waiting time, ``WallQueue``);
``factory`` is the only module that names the concrete sources; ``queue`` is the bounded
input queue in front of the join (GrubJoin and the drop baselines).
"""

from pipeline.operators.budget.factory import make_budget, make_queue_budget, restore_budget
from pipeline.operators.budget.protocol import Budget
from pipeline.operators.budget.reading import BudgetReading

__all__ = ["Budget", "BudgetReading", "make_budget", "make_queue_budget", "restore_budget"]
