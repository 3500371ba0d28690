"""The routers the virtual cluster compares, behind one interface: ``route`` a batch of
gids to (row, key) copies, say which key ``owns`` each result, ``observe`` the keys'
usage after a batch.

* ``hash`` — hash of the join key mod G (equi-joins; :class:`pipeline.diffusion.routing.Router`);
* ``atr`` — static ATR, round robin, fixed master and T (the Spark job's routing);
* ``atr-adaptive`` — :class:`pipeline.diffusion.adaptive.AdaptiveRouter` (least-loaded
  keys, master switching, T hill climb, each as configured);
* ``ctr`` — coordinated tuple routing lives in :mod:`bench.diffusion.ctr_run` (it ships
  partial results, so it has its own runner).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from bench.diffusion.workload import Workload
from pipeline.diffusion.adaptive import AdaptiveConfig, AdaptiveRouter
from pipeline.diffusion.routing import Router, RouterConfig, stable_hash_array

IntArray = npt.NDArray[np.int64]


class VRouter(Protocol):
    def route(self, gids: IntArray) -> tuple[IntArray, IntArray]: ...
    def owners(self, members: IntArray) -> IntArray: ...
    def observe(self, cost: npt.ArrayLike, memory: npt.ArrayLike,
                received: npt.ArrayLike, until: int) -> None: ...


class StaticRouter:
    """``hash`` or static ``atr`` over :class:`Router`."""

    def __init__(self, wl: Workload, config: RouterConfig) -> None:
        self.wl, self.router = wl, Router(config)
        self.config = config

    def route(self, gids: IntArray) -> tuple[IntArray, IntArray]:
        keys = self.wl.key[gids] if self.config.mode == "hash" else None
        return self.router.route_batch(self.wl.stream[gids], self.wl.ts[gids], keys)

    def owners(self, members: IntArray) -> IntArray:
        g = self.config.groups
        if self.config.mode == "hash":
            h = stable_hash_array(self.wl.key[members[:, 0]])
            return (h % np.uint64(g)).astype(np.int64)
        seg = self.wl.ts[members[:, self.config.master]] // self.config.segment_ms
        return np.asarray(seg % g, dtype=np.int64)

    def observe(self, cost: npt.ArrayLike, memory: npt.ArrayLike,
                received: npt.ArrayLike, until: int) -> None:
        return None


class AdaptiveVRouter:
    """:class:`AdaptiveRouter` on the workload's gids."""

    def __init__(self, wl: Workload, config: AdaptiveConfig) -> None:
        self.wl, self.router = wl, AdaptiveRouter(config)

    def route(self, gids: IntArray) -> tuple[IntArray, IntArray]:
        return self.router.route_batch(self.wl.stream[gids], self.wl.ts[gids])

    def owners(self, members: IntArray) -> IntArray:
        return self.router.log.owners(self.wl.ts[members])

    def observe(self, cost: npt.ArrayLike, memory: npt.ArrayLike,
                received: npt.ArrayLike, until: int) -> None:
        self.router.observe(cost, memory, received, until)
