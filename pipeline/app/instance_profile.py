"""Where the join instance's time goes per admitted tuple, phase by phase (issue 28).

Feeds a workload sample through the job's :class:`~pipeline.runtime.instance.JoinInstance`
one trigger interval per micro-batch (as :mod:`pipeline.app.capacity` times it), with
the spec's shedding on and a :class:`~pipeline.core.profile.PhaseProfile` attached, each
batch followed by its state save. The windows are first filled with ``warm_seconds`` of
the sample (unprobed, untimed). The JVM's part (Kafka read, decode, routing, shuffle,
Arrow encoding) is not here: only the Spark job sees it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipeline.app.capacity import HEADER, envelope_frames
from pipeline.core.profile import PhaseProfile
from pipeline.operators.events import event_from_dump
from pipeline.spec.model import Spec


def profile_instance(spec: Spec, sample: Sequence[Mapping[str, Any]], warm_seconds: float,
                     timer: Callable[[], float] = time.perf_counter) -> PhaseProfile:
    """The phase profile of ``spec``'s instance over the records of ``sample`` with event
    time ≥ ``warm_seconds`` (the earlier ones pre-fill the windows). ``timer`` is both the
    profile's timer and the instance's wall clock (the wall budget's)."""
    from pipeline.runtime.instance import InstanceConfig, JoinInstance

    index = {s: i for i, s in enumerate(spec.join.streams)}
    attrs = sorted({k for r in sample for k in r} - set(HEADER))
    warm_ms = int(warm_seconds * 1000)
    warm = sorted((event_from_dump(r, index) for r in sample
                   if int(r["event_time"]) < warm_ms), key=lambda e: e.ts)
    frames = envelope_frames(spec, [r for r in sample if int(r["event_time"]) >= warm_ms],
                             attrs)
    inst = JoinInstance(InstanceConfig.from_spec(spec, attrs), 0, timer)
    inst.engine.preload(warm)
    profile = PhaseProfile(timer)
    inst.attach_profile(profile)
    for f in frames:
        inst.process(f)
        inst.changes()
    return profile
