"""Which class implements each ``disorder.mode`` / ``shedding.mode`` of the spec.

Plug-ins that live in other modules (quality-driven K, GrubJoin, the drop baselines) are named
here by module and class and imported on first use, so the engine never imports them
eagerly and a missing plug-in is a clear :class:`ConfigError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, cast

from pipeline.core.errors import ConfigError
from pipeline.operators.contract import ShedderFactory, SlackPolicyFactory

if TYPE_CHECKING:  # static check only: every class below satisfies its factory protocol
    from pipeline.operators.disorder.quality.policy import QualityPolicy
    from pipeline.operators.disorder.slack_policies import FixedSlack, MaxSlack, NoSlack
    from pipeline.operators.shedding.baselines.randomdrop import RandomDropShedder
    from pipeline.operators.shedding.baselines.randomdrop_static import StaticRandomDropShedder
    from pipeline.operators.shedding.baselines.taildrop import TailDropShedder
    from pipeline.operators.shedding.grubjoin.shedder import GrubJoinShedder
    from pipeline.operators.shedding.noshed import NoShedder

    _POLICIES: tuple[SlackPolicyFactory, ...] = (NoSlack, MaxSlack, FixedSlack, QualityPolicy)
    _SHEDDERS: tuple[ShedderFactory, ...] = (NoShedder, GrubJoinShedder, RandomDropShedder,
                                             StaticRandomDropShedder, TailDropShedder)

SLACK_POLICIES: dict[str, tuple[str, str]] = {
    "none": ("pipeline.operators.disorder.slack_policies", "NoSlack"),
    "max": ("pipeline.operators.disorder.slack_policies", "MaxSlack"),
    "fixed": ("pipeline.operators.disorder.slack_policies", "FixedSlack"),
    "quality": ("pipeline.operators.disorder.quality.policy", "QualityPolicy"),
}

SHEDDERS: dict[str, tuple[str, str]] = {
    "off": ("pipeline.operators.shedding.noshed", "NoShedder"),
    "grubjoin": ("pipeline.operators.shedding.grubjoin.shedder", "GrubJoinShedder"),
    "randomdrop": ("pipeline.operators.shedding.baselines.randomdrop", "RandomDropShedder"),
    "randomdrop-static": ("pipeline.operators.shedding.baselines.randomdrop_static",
    "StaticRandomDropShedder"),
    "taildrop": ("pipeline.operators.shedding.baselines.taildrop", "TailDropShedder"),
}


def _load(table: dict[str, tuple[str, str]], mode: str, key: str) -> object:
    if mode not in table:
        raise ConfigError(f"{key}: unknown mode {mode!r} (choose from {sorted(table)})")
    module_name, class_name = table[mode]
    try:
        module = importlib.import_module(module_name)
        return getattr(module, class_name)
    except (ModuleNotFoundError, AttributeError) as exc:
        raise ConfigError(f"{key}: mode {mode!r} is not available ({exc})") from exc


def slack_policy_class(mode: str) -> SlackPolicyFactory:
    """The SlackPolicy class of ``disorder.mode``."""
    return cast(SlackPolicyFactory, _load(SLACK_POLICIES, mode, "disorder.mode"))


def shedder_class(mode: str) -> ShedderFactory:
    """The Shedder class of ``shedding.mode``."""
    return cast(ShedderFactory, _load(SHEDDERS, mode, "shedding.mode"))
