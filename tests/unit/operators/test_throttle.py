"""The throttle fraction update (GrubJoin §IV-A), table-driven."""

from __future__ import annotations

import pytest

from pipeline.errors import ConfigError, OperatorStateError
from pipeline.operators.throttle import Z_MIN, Throttle, ThrottleConfig


@pytest.mark.parametrize(
    ("z0", "beta", "headroom", "cap", "want"),
    [
        (1.0, 0.5, None, True, 0.5),      # fell behind: z ← β·z
        (0.5, 0.8, 0.9, True, 0.4),       # β < 1 and over budget: cut
        (0.5, 0.8, 10.0, True, 0.4),      # β < 1 under budget: burst drops still cut
        (0.5, 0.8, 10.0, False, 0.4),     # paper's rule: cut
        (0.5, 1.0, None, True, 0.6),      # boost γ = 1.2
        (0.9, 1.0, None, True, 1.0),      # capped at 1
        (0.5, 1.0, 1.1, True, 0.55),      # boost capped by measured headroom
        (0.5, 1.0, 0.9, True, 0.45),      # over the utilization target: back off
        (0.5, 1.0, 1.1, False, 0.6),      # paper's rule only
        (0.002, 0.1, None, True, Z_MIN),  # floor
    ],
)
def test_update(z0: float, beta: float, headroom: float | None, cap: bool,
                want: float) -> None:
    t = Throttle(ThrottleConfig(boost=1.2, cap_by_headroom=cap), z=z0)
    assert t.update(beta, headroom) == pytest.approx(want)
    assert t.z == pytest.approx(want)


def test_burst_drops_lower_the_utilization_target() -> None:
    """Drops under budget (h ≥ 1, β ≥ burst_beta) cut z and lower t by β; later boosts
    are capped by t·h, and t relaxes back per drop-free interval."""
    t = Throttle(ThrottleConfig(boost=1.2, relax=1.01), z=0.5)
    t.update(0.9, 2.0)
    assert t.z == pytest.approx(0.45)
    assert t.target == pytest.approx(0.9)
    t.update(1.0, 1.05)  # t·h = 0.945 < 1: back off instead of boosting
    assert t.z == pytest.approx(0.45 * 0.9 * 1.05)
    assert t.target == pytest.approx(0.9 * 1.01)
    heavy = Throttle(ThrottleConfig(), z=1.0)
    heavy.update(0.3, 1.2)  # most tuples lost: plain overload, t is kept
    assert heavy.z == pytest.approx(0.3)
    assert heavy.target == 1.0
    back = Throttle.from_snapshot(t.config, t.snapshot())
    assert (back.z, back.target) == (t.z, t.target)


def test_bad_values() -> None:
    with pytest.raises(ConfigError, match="boost"):
        ThrottleConfig(boost=1.0)
    with pytest.raises(ConfigError, match="burst_beta"):
        ThrottleConfig(burst_beta=0.0)
    with pytest.raises(ConfigError, match="relax"):
        ThrottleConfig(relax=0.9)
    with pytest.raises(OperatorStateError, match="beta"):
        Throttle(ThrottleConfig()).update(-1.0)
    with pytest.raises(OperatorStateError):
        Throttle.from_snapshot(ThrottleConfig(), {})


def test_snapshot_roundtrip() -> None:
    t = Throttle(ThrottleConfig(), z=0.3)
    assert Throttle.from_snapshot(t.config, t.snapshot()).z == 0.3
