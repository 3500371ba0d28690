"""Quality-driven K sizing (Ji et al., ICDE §IV): the Statistics Manager (``delay_stats``
with ``adwin`` change detection), the Tuple-Productivity Profiler (``profiler``), the
recall model γ(L, K) (``recall_model``, Eqs. 1–6), the Buffer-Size Manager
(``buffer_manager``, Eq. 7 and Alg. 3), and the policy that plugs them into the engine
(``policy``).
"""

from pipeline.operators.disorder.quality.policy import QualityConfig, QualityPolicy

__all__ = ["QualityConfig", "QualityPolicy"]
