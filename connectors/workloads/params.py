"""Per-workload knobs (frozen), with the papers' defaults.

Everything common to all workloads (streams, rates, duration, lags, disorder, seed) is in
:class:`connectors.workloads.spec.WorkloadSpec`; what is specific to one generator is here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.errors import ConfigError


def _positive(owner: str, **values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ConfigError(f"{owner}.{name}: must be > 0, got {value!r}")


@dataclass(frozen=True)
class SensorParams:
    """GrubJoin (Gedik et al., TKDE) §VI-B: X_i(φ) = (D/η)(φ + τ_i) + κ_i·N(0,1) mod D.

    ``domain`` is D, ``period`` is η (seconds; the wrap-around period), ``kappa`` the
    default deviation κ_i when none is given per stream (the paper's κ_1 = κ_2 = 2).
    """

    domain: float = 1000.0
    period: float = 50.0
    kappa: float = 2.0

    def __post_init__(self) -> None:
        _positive("sensors", domain=self.domain, period=self.period)
        if self.kappa < 0:
            raise ConfigError(f"sensors.kappa: must be >= 0, got {self.kappa!r}")


@dataclass(frozen=True)
class EquiParams:
    """Ji et al. (ICDE) §VI, D_syn^×3: a1 ∈ [1, domain], Zipf with a time-varying skew.

    The skew starts at ``initial_skew`` and is redrawn uniformly from
    [``skew_min``, ``skew_max``] after gaps drawn uniformly from [``gap_min_s``,
    ``gap_max_s``] (the paper: 1.0, [0, 5], gaps of 1–10 minutes).
    """

    domain: int = 100
    initial_skew: float = 1.0
    skew_min: float = 0.0
    skew_max: float = 5.0
    gap_min_s: float = 60.0
    gap_max_s: float = 600.0

    def __post_init__(self) -> None:
        _positive("equi", domain=self.domain, gap_min_s=self.gap_min_s)
        if not 0 <= self.skew_min <= self.skew_max:
            raise ConfigError(
                f"equi.skew_min/skew_max: need 0 <= min <= max, got "
                f"{self.skew_min!r}/{self.skew_max!r}"
            )
        if self.initial_skew < 0:
            raise ConfigError(f"equi.initial_skew: must be >= 0, got {self.initial_skew!r}")
        if self.gap_max_s < self.gap_min_s:
            raise ConfigError(
                f"equi.gap_max_s: must be >= gap_min_s, got {self.gap_max_s!r} < "
                f"{self.gap_min_s!r}"
            )


@dataclass(frozen=True)
class NewsParams:
    """The news workload: agencies report shared stories with weighted keywords.

    A new story breaks every ``story_interval_s``; an item of agency i at time φ is about
    one of the ``recent_stories`` stories that had broken by φ − τ_i, picked Zipf
    (``story_skew``) by recency. A story has ``keywords_per_story`` distinct keywords out
    of a vocabulary of ``vocabulary`` words with weights in [0.5, 1.5]; an item keeps each
    with probability ``keep_prob`` (the first always), multiplies its weight by
    lognormal(0, ``weight_noise``) noise and adds ``noise_keywords`` random words of
    weight in [0.05, 0.3]. Items of one story thus have a high cosine similarity.
    """

    vocabulary: int = 500
    story_interval_s: float = 5.0
    recent_stories: int = 50
    story_skew: float = 1.0
    keywords_per_story: int = 6
    keep_prob: float = 0.8
    weight_noise: float = 0.2
    noise_keywords: int = 2

    def __post_init__(self) -> None:
        _positive(
            "news",
            vocabulary=self.vocabulary,
            story_interval_s=self.story_interval_s,
            recent_stories=self.recent_stories,
            keywords_per_story=self.keywords_per_story,
            keep_prob=self.keep_prob,
        )
        if self.keywords_per_story > self.vocabulary:
            raise ConfigError(
                f"news.keywords_per_story: {self.keywords_per_story} exceeds the vocabulary "
                f"of {self.vocabulary}"
            )
        if self.keep_prob > 1:
            raise ConfigError(f"news.keep_prob: must be <= 1, got {self.keep_prob!r}")
        if self.story_skew < 0 or self.weight_noise < 0 or self.noise_keywords < 0:
            raise ConfigError(
                "news.story_skew/weight_noise/noise_keywords: must be >= 0, got "
                f"{self.story_skew!r}/{self.weight_noise!r}/{self.noise_keywords!r}"
            )


@dataclass(frozen=True)
class PositionParams:
    """Stand-in for Ji et al.'s soccer data (DEBS 2013): players moving on a field.

    Each stream is a team of ``players`` players on a ``length`` × ``width`` m field;
    readings round-robin over the team's players. A player's path is a smooth sum of
    three sinusoids per axis around a home position (angular speeds in
    [``omega_min``, ``omega_max``] rad/s, total amplitude ``roam`` m), clipped to the field.

    Marking (ours): in every team but the first, players 1..``markers`` each mark the
    first team's player of the same number: the marker runs the path its man ran
    ``lag`` seconds earlier (a lag per marker, uniform in [``mark_lag_min``,
    ``mark_lag_max``] s), off it by a gap whose length swings between 0 and ``mark_gap``
    m (period uniform in [20, 60] s) as the direction turns. ``markers = 0`` (the default)
    is the generator without marking, draw for draw.
    """

    players: int = 8
    length: float = 105.0
    width: float = 68.0
    roam: float = 25.0
    omega_min: float = 0.02
    omega_max: float = 0.25
    markers: int = 0
    mark_lag_min: float = 0.5
    mark_lag_max: float = 3.0
    mark_gap: float = 2.0

    def __post_init__(self) -> None:
        _positive(
            "positions",
            players=self.players,
            length=self.length,
            width=self.width,
            roam=self.roam,
            omega_min=self.omega_min,
        )
        if self.omega_max < self.omega_min:
            raise ConfigError(
                f"positions.omega_max: must be >= omega_min, got {self.omega_max!r}"
            )
        if not 0 <= self.markers <= self.players:
            raise ConfigError(
                f"positions.markers: must be in [0, players = {self.players}], "
                f"got {self.markers!r}"
            )
        if not 0 <= self.mark_lag_min <= self.mark_lag_max:
            raise ConfigError(
                "positions.mark_lag_min/mark_lag_max: need 0 <= min <= max, got "
                f"{self.mark_lag_min!r}/{self.mark_lag_max!r}"
            )
        if self.mark_gap < 0:
            raise ConfigError(f"positions.mark_gap: must be >= 0, got {self.mark_gap!r}")


@dataclass(frozen=True)
class OverlapParams:
    """Gedik et al. (CIKM) §5: streams of item sets whose item popularity rotates.

    A set holds round(N(``size_mean``, ``size_std``)) distinct items (at least 1, at most
    ``items``) of 1..L (L = ``items``), drawn one after another with probability ∝ the
    item's popularity, Zipf with skew κ (``kappa``) over its popularity rank. The ranks
    rotate with the cycle period ς (``cycle_s``): at stream time T a stream shifted by τ
    has most popular item a = 1 + ⌊L·((T − τ) mod ς)/ς⌋, then a + 1, … (mod L). Stream i
    (0-based) is shifted by i·τ (τ = ``shift_s``) unless ``--lags`` gives τ_i. Defaults:
    the paper's L = 100, μ = 5, σ = 1, its Fig. 2 κ = 0.8, and ς = 2w, τ = 5/8·ς for its
    w = 20 s windows.
    """

    items: int = 100
    size_mean: float = 5.0
    size_std: float = 1.0
    kappa: float = 0.8
    cycle_s: float = 40.0
    shift_s: float = 25.0

    def __post_init__(self) -> None:
        _positive("overlap", items=self.items, cycle_s=self.cycle_s)
        if self.size_mean < 1 or self.size_std < 0:
            raise ConfigError(f"overlap.size_mean/size_std: need mean >= 1 and std >= 0, got "
                              f"{self.size_mean!r}/{self.size_std!r}")
        if self.kappa < 0:
            raise ConfigError(f"overlap.kappa: must be >= 0, got {self.kappa!r}")


@dataclass(frozen=True)
class OverlapEquiParams(OverlapParams):
    """The equi-join variant of :class:`OverlapParams` (Gedik et al., CIKM §5): single
    values, L = 5,000, μ = 1, σ = 0; the same rotating popularity."""

    items: int = 5000
    size_mean: float = 1.0
    size_std: float = 0.0


WorkloadParams = (SensorParams | EquiParams | NewsParams | PositionParams | OverlapParams)


_PARAMS_OF: dict[str, type] = {"sensors": SensorParams, "equi": EquiParams,
                               "news": NewsParams, "positions": PositionParams,
                               "overlap": OverlapParams, "overlap-equi": OverlapEquiParams}


def params_from(workload: str, pairs: dict[str, str]) -> WorkloadParams:
    """``workload``'s knobs with the defaults replaced by ``pairs`` (name → text, e.g.
    from ``harvest produce --param story_interval_s=0.5``), each converted to the type of
    its default; ConfigError naming an unknown knob or a value that does not convert."""
    from dataclasses import fields

    if workload not in _PARAMS_OF:
        raise ConfigError(f"--param: no knobs for workload {workload!r}")
    cls = _PARAMS_OF[workload]
    defaults = cls()
    known = {f.name for f in fields(cls)}
    values: dict[str, float | int] = {}
    for name, text in pairs.items():
        if name not in known:
            raise ConfigError(f"--param: {workload} has no knob {name!r}; known: "
                              + ", ".join(sorted(known)))
        kind = type(getattr(defaults, name))
        try:
            values[name] = kind(text)
        except ValueError:
            raise ConfigError(f"--param {name}: not a {kind.__name__}, got {text!r}") from None
    params: WorkloadParams = cls(**values)
    return params
