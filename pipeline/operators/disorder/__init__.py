"""Disorder handling (Ji et al., "Quality-Driven Disorder Handling for M-way Sliding
Window Stream Joins", ICDE): a K-slack buffer per stream (``kslack``, §II), the
Synchronizer that merges their outputs in timestamp order (``synchronizer``, Alg. 1),
both over a run of arrivals at once (``run_front``), and the policies that size the
common K: the baselines none / max / fixed (``slack_policies``) and the quality-driven
one (``quality``, Fig. 2 and Alg. 3).
"""

from pipeline.operators.disorder.kslack import KSlack, KSlackConfig
from pipeline.operators.disorder.slack_policies import FixedSlack, MaxSlack, NoSlack
from pipeline.operators.disorder.synchronizer import Synchronizer, SynchronizerConfig

__all__ = ["FixedSlack", "KSlack", "KSlackConfig", "MaxSlack", "NoSlack", "Synchronizer",
           "SynchronizerConfig"]
