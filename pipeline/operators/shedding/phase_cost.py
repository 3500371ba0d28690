"""The per-tuple cost c_t measured phase by phase on the wall clock (ours; issue 28).

GrubJoin's cost model (Gedik et al. §IV-C) counts work in comparisons and charges every
admitted tuple a fixed c_t besides its probe: C = Σ_i λ_i·(c_t + C'_i). The paper leaves
c_t a constant; in the real job an admitted tuple's own work — its plan, insertion and
expiry, the join statistics, its result rows, its share of the state save and of the
output frames — is timed by the join instance's phase profile
(:class:`~pipeline.core.profile.PhaseProfile`), and so is the probing that harvesting
sheds. With the comparisons the probes ran, c_t follows as a ratio of two measured
means, in the model's unit:

    c_t = (seconds of the admitted tuples' own phases / tuples admitted)
          / (seconds of probing / comparisons).

No regression is involved (the least-squares fit of :mod:`~pipeline.operators.shedding.
wall_fit` cannot separate c_t from the per-comparison cost when every run has about the
same comparisons per tuple). The phases charged before admission (Arrow → pandas,
validation, K-slack and the Synchronizer, the adaptation steps) are paid by every
arrival, admitted or not, so they are not part of c_t: no choice of admitted fraction or
harvest saves them.

The profile's totals only grow; :meth:`TupleCostMeter.observe` takes the difference from
the previous reading (a mark that is not state: a restored operator starts a fresh
profile and a fresh mark) and ages the sums by ``decay`` per adaptation step. Phases that
are charged once per micro-batch (results, state, output) then average over the
batches inside the sums' memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.core.errors import OperatorStateError
from pipeline.core.profile import PhaseProfile

__all__ = ["OWN_PHASES", "TupleCostMeter"]

#: the phases an admitted tuple pays for itself, beside its probe (module docstring)
OWN_PHASES = ("admission", "insertion", "join_stats", "results", "state", "output")


@dataclass
class TupleCostMeter:
    """Aged sums of (own seconds, probing seconds, tuples admitted, comparisons)."""

    decay: float
    own_s: float = 0.0
    probe_s: float = 0.0
    tuples: float = 0.0
    comparisons: float = 0.0
    #: the last profile reading (own s, probing s) and the counts charged since; not state
    _mark: tuple[float, float] | None = field(default=None, repr=False)
    _pending_tuples: float = field(default=0.0, repr=False)
    _pending_comparisons: float = field(default=0.0, repr=False)

    def charge(self, tuples: int, comparisons: float) -> None:
        """``tuples`` admitted tuples ran ``comparisons`` comparisons (a run's charge)."""
        self._pending_tuples += tuples
        self._pending_comparisons += comparisons

    def observe(self, profile: PhaseProfile | None) -> None:
        """Age the sums and add what the profile timed since the previous call."""
        if profile is None:
            self._mark = None
            return
        own = sum(profile.seconds.get(p, 0.0) for p in OWN_PHASES)
        probe = profile.seconds.get("probing", 0.0)
        if self._mark is not None and own >= self._mark[0] and probe >= self._mark[1]:
            d = self.decay
            self.own_s = d * self.own_s + (own - self._mark[0])
            self.probe_s = d * self.probe_s + (probe - self._mark[1])
            self.tuples = d * self.tuples + self._pending_tuples
            self.comparisons = d * self.comparisons + self._pending_comparisons
        self._mark = (own, probe)
        self._pending_tuples = 0.0
        self._pending_comparisons = 0.0

    def value(self) -> float | None:
        """c_t in comparisons (module docstring); None until tuples, probing seconds and
        comparisons have all been seen."""
        if self.tuples <= 0 or self.probe_s <= 0 or self.comparisons <= 0:
            return None
        return (self.own_s / self.tuples) / (self.probe_s / self.comparisons)

    def snapshot(self) -> dict[str, float]:
        return {"own_s": self.own_s, "probe_s": self.probe_s, "tuples": self.tuples,
                "comparisons": self.comparisons}

    @classmethod
    def restore(cls, decay: float, snap: dict[str, Any]) -> TupleCostMeter:
        try:
            return cls(decay, float(snap["own_s"]), float(snap["probe_s"]),
                       float(snap["tuples"]), float(snap["comparisons"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"tuple cost meter: bad snapshot {snap!r}") from exc
