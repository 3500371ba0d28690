"""CPU load shedding for the m-way join (Gedik et al., "GrubJoin", TKDE).

Operator throttling (``throttle``: the fraction z, §IV-A) over the cost and output models
(``costmodel``, §IV-C) and the online rate and selectivity estimates (``online_stats``);
``grubjoin`` harvests the most productive basic windows (§IV–V); ``baselines`` are the
comparisons: random drop (adaptive and the paper's static one) and tail drop; ``noshed``
is the exact join (``mode = "off"``).
"""

from pipeline.operators.shedding.baselines import (
    RandomDropShedder,
    StaticRandomDropShedder,
    TailDropShedder,
)
from pipeline.operators.shedding.grubjoin import GrubJoinShedder
from pipeline.operators.shedding.noshed import NoShedder
from pipeline.operators.shedding.throttle import Throttle, ThrottleConfig

__all__ = ["GrubJoinShedder", "NoShedder", "RandomDropShedder", "StaticRandomDropShedder",
           "TailDropShedder", "Throttle", "ThrottleConfig"]
