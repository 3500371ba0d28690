"""PROB/OPT on uncorrelated Zipf streams over many value rankings (#18): a follow-up
experiment to `harvest bench memory`, not a `harvest bench` target.

``python -m bench.memory.permutations [--seeds 12] [--zipfs 1,1.25,1.5]`` runs the
paper's Fig. 10 input at its length (Das et al. §5.2: 2-way equi-join, domain 50,
w = 400, M = w, one tuple per stream per step, 2w warm-up + 4,800 counted steps) on
``--seeds`` input seeds per skew. "Uncorrelated" gives each stream its own random ranking
of the 50 values, so each seed is another pair of rankings; `harvest bench memory`
averages three of them. Per input it records OPT-offline, PROB (online counts, what a
user runs) and PROB with the whole input's frequencies loaded in advance (the paper's
setting), and the *alignment* of the two streams: the cosine of their value-frequency
vectors (1 when both rank the values alike, as in Fig. 11). Writes
``bench/results/memory_permutations.json`` and ``.png`` (PROB/OPT against alignment).

Not timed (the ratios are counts), so it needs no bench lock; ~10 minutes of CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.kit.output import RESULTS_DIR, save_figure, write_json
from bench.memory.runs import Workload, run_online, run_opt, step_workload

W = 400
AFTER = 4800
FIRST_SEED = 11
TARGET = 0.96


def alignment(wl: Workload) -> float:
    """Cosine of the two streams' value-frequency vectors over the whole input."""
    vals = wl.vals[:, 0].astype(np.int64)
    lo = int(vals.min())
    size = int(vals.max()) - lo + 1
    a = np.bincount(vals[wl.streams == 0] - lo, minlength=size).astype(np.float64)
    b = np.bincount(vals[wl.streams == 1] - lo, minlength=size).astype(np.float64)
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def one(zipf: float, seed: int) -> dict[str, Any]:
    """OPT, PROB and PROB-KNOWN on one uncorrelated input at M = w."""
    wl = step_workload("fig10-long", W, (zipf, zipf), seed=seed, after=AFTER,
                       correlated=False)
    opt = int(run_opt(wl, W)["results"])
    prob = int(run_online(wl, "prob", W, seed=seed)["results"])
    known = int(run_online(wl, "prob", W, seed=seed, known=True)["results"])
    return {"zipf": zipf, "seed": seed, "alignment": round(alignment(wl), 4),
            "opt": opt, "prob": prob, "prob_known": known,
            "prob_over_opt": round(prob / opt, 4), "known_over_opt": round(known / opt, 4)}


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per skew: mean, min, max of PROB/OPT and how many inputs reach the 0.96 target."""
    out: dict[str, Any] = {}
    for z in sorted({r["zipf"] for r in rows}):
        ratios = [r["prob_over_opt"] for r in rows if r["zipf"] == z]
        known = [r["known_over_opt"] for r in rows if r["zipf"] == z]
        out[f"{z:g}"] = {"inputs": len(ratios), "prob_over_opt_mean": round(
            statistics.fmean(ratios), 4), "min": min(ratios), "max": max(ratios),
            "known_over_opt_mean": round(statistics.fmean(known), 4),
            f"inputs_at_or_above_{TARGET}": sum(x >= TARGET for x in ratios)}
    return out


def plot(rows: Sequence[dict[str, Any]], results_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for z in sorted({r["zipf"] for r in rows}):
        sel = [r for r in rows if r["zipf"] == z]
        ax.scatter([r["alignment"] for r in sel], [r["prob_over_opt"] for r in sel],
                   label=f"Zipf {z:g}")
    ax.axhline(TARGET, color="grey", linestyle="--", linewidth=1, label="0.96 target")
    ax.set_xlabel("alignment of the two streams (cosine of value frequencies)")
    ax.set_ylabel("PROB / OPT at M = w")
    ax.set_title("Uncorrelated Zipf, domain 50, w = 400: one point per value ranking")
    ax.legend()
    return save_figure(fig, "memory_permutations", results_dir)


def run(seeds: int, zipfs: Sequence[float], results_dir: Path) -> dict[str, Any]:
    rows = []
    for z in zipfs:
        for seed in range(FIRST_SEED, FIRST_SEED + seeds):
            row = one(z, seed)
            print(json.dumps(row), flush=True)
            rows.append(row)
    payload = {"setup": {"w": W, "memory": W, "domain": 50, "counted_steps": AFTER,
                         "warmup_steps": 2 * W, "seeds": [FIRST_SEED, FIRST_SEED + seeds - 1]},
               "summary": summarize(rows), "rows": rows}
    write_json("memory_permutations", payload, results_dir)
    plot(rows, results_dir)
    return payload


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.memory.permutations",
                                description=__doc__)
    p.add_argument("--seeds", type=int, default=12)
    p.add_argument("--zipfs", default="1,1.25,1.5")
    args = p.parse_args(argv)
    out = run(args.seeds, [float(z) for z in args.zipfs.split(",")], RESULTS_DIR)
    print(json.dumps(out["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
