"""The m-way sliding-window join (Ji et al., ICDE, Alg. 2; MJoin-style, with GrubJoin's
basic windows and probe plans, Gedik et al., TKDE §1.2–1.5).

Windows are stored as basic windows of NumPy columns (``windows``, ``basicwindow``,
``growable``) with optional sorted value indexes (``valueindex``); predicates are
evaluated over whole basic windows (``predicates``). :class:`JoinState` holds everything
the join keeps between tuples; two probe paths read it: one tuple at a time
(``tuple_probe`` over ``probe_steps``) and a *run* of tuples released together at once
(``run`` over ``run_probe``, ``run_side``, ``run_match``) — same results. ``plan`` is
what a shedder tells a probe and what the probe reports back.
"""

from pipeline.operators.join.config import JoinConfig, JoinOutput, Outcome
from pipeline.operators.join.mjoin import MWayJoin
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan
from pipeline.operators.join.predicates import build_predicate
from pipeline.operators.join.state import JoinState
from pipeline.operators.join.windows import StreamWindow

__all__ = ["JoinConfig", "JoinOutput", "JoinState", "MWayJoin", "Outcome", "ProbeFeedback",
           "ProbePlan", "StreamWindow", "build_predicate"]
