"""What GrubJoin §VI-B reports for each figure `harvest bench grubjoin` reproduces
(``paper``), and why our numbers differ where they do (``notes``).

The paper's numbers are improvements of GrubJoin over its RandomDrop (drop
probabilities fixed by Ayad & Naughton's static framework) given in the text; the
figures themselves are images, so where the text gives no number ``ratio`` is None.
Ratios are output(GrubJoin) / output(RandomDrop): "65% better" = 1.65.
"""

from __future__ import annotations

from typing import Any

PAPER: dict[str, dict[str, Any]] = {
    "fig11_aligned": {
        "text": "GrubJoin provides up to 65% better output rate than RandomDrop "
                "(aligned, m = 3, tau = 0, kappa = 2, 2, 50); the same below 100 tuples/s",
        "max_ratio": 1.65,
    },
    "fig11_nonaligned": {
        "text": "up to 150% improvement (nonaligned: tau = 0, 5, 15 s)",
        "max_ratio": 2.5,
    },
    "fig12": {
        "text": "200 tuples/s, nonaligned: improvement 250% at kappa_3 = 25, 150% at 50, "
                "25% at 75; close when correlations are gone",
        "ratio_by_kappa": {"25": 3.5, "50": 2.5, "75": 1.25},
    },
    "fig13_aligned": {
        "text": "100 tuples/s: the improvement grows linearly with m, less than "
                "nonaligned (numbers only in the figure)",
        "ratio_by_m": None,
    },
    "fig13_nonaligned": {
        "text": "100 tuples/s: the improvement grows linearly with m and reaches 700% "
                "for the 5-way join",
        "ratio_by_m": {"5": 8.0},
    },
    "table2": {
        "text": "75 tuples/s (the highest rate at which both perform about the same, "
                "nonaligned): improvement 6/10/15/22/27/35% at cost multiplier "
                "1/2/4/6/8/10",
        "ratio_by_cost_multiplier": {"1": 1.06, "2": 1.10, "4": 1.15, "6": 1.22,
                                     "8": 1.27, "10": 1.35},
    },
}

#: why our numbers differ (measured; the runs behind them are in docs/NOTES.md)
NOTES: dict[str, str] = {
    "fig11_aligned": (
        "Ours is far above 1.65x at every overloaded rate (3.9x at 200, 8.0x at 500 "
        "tuples/s over the best baseline). Cause: our virtual CPU charges a tuple 1 unit "
        "besides its comparisons, so nearly all of the full join's cost is comparisons, "
        "which harvesting sheds. Charged a fixed per-tuple cost c_t that no shedder avoids "
        "once a tuple is admitted, the ratio at 500/s falls to 4.9x (c_t = 300) and 0.96x "
        "(c_t = 3000: GrubJoin admits every tuple and pays it, the drop baselines do not; "
        "per_tuple_cost). "
        "The paper's Java join does such per-tuple work (insertion, expiry, queues; the "
        "generator shares the CPU, its footnote 4) that its cost model leaves out. The "
        "paper's greedy gives the same output as our exact solver within 5% here."),
    "fig11_nonaligned": (
        "Ours peaks at 4.3x (350 tuples/s) against 2.5x, then dips to 1.8x at 500: "
        "GrubJoin's throttle cuts z on every interval with queue drops, and at 500/s "
        "single probes outlast the 10-tuple queue, so z keeps falling and GrubJoin used "
        "about a third of the CPU over the measured span (its back-off; the paper's footnote 4 "
        "sees one too). The fixed per-tuple cost of the aligned note applies: 3.2x at 200/s "
        "falls to 3.0x with c_t = 300 and 1.3x with c_t = 3000 (1.8x, 1.1x, 0.39x at "
        "500/s). Greedy = exact here (identical output)."),
    "fig12": (
        "Means of 3 seeds. kappa_3 = 25 and 50 are close to the paper (3.3x vs 3.5x, 3.0x "
        "vs 2.5x); at 75 ours is 3.6x against 1.25x, and still 3.0x at 100. kappa_1 = "
        "kappa_2 = 2 keep S1-S2 tightly correlated whatever kappa_3, so GrubJoin still "
        "scans one of ten S2 windows for each S1 tuple; only the S3 position loses its "
        "focus. GrubJoin's output swings up to 2.3x between seeds at kappa_3 >= 50 (16.0k "
        "to 36.5k at 75; the baselines move < 3%), so single points differ by +-40%. The "
        "fixed per-tuple cost of the Fig. 11 note brings it down (0.88x at kappa_3 = 75 "
        "with c_t = 3000, single seed); we do not know how far the paper's axis reaches."),
    "fig13_aligned": (
        "The paper gives no aligned numbers (figure only). Ours grows with m: 1.0x, "
        "3.4x, 5.7x at m = 3, 4, 5 (means of 3 seeds). m = 3 sheds nothing: our "
        "capacity is calibrated so that the 3-way join saturates at exactly 100 tuples/s."),
    "fig13_nonaligned": (
        "Ours 1.0x, 3.4x, 5.5x at m = 3, 4, 5 against up to 8x at m = 5; it grows with m "
        "as in the paper, but m = 3 sheds nothing (capacity calibrated at 100 tuples/s "
        "for m = 3), and single m = 5 runs swing 2-4x between seeds (per_seed). Unlike "
        "the paper, nonaligned is not above aligned here: GrubJoin's throttle leaves more "
        "of the CPU unused in the nonaligned runs (see the Fig. 11 notes)."),
    "table2": (
        "Means of 3 seeds: 1.00, 1.00, 1.24, 2.08, 2.47, 2.65x at x1..x10 against "
        "1.06..1.35x; monotone like the paper's, but steeper. At 75 tuples/s our full "
        "join needs ~half the calibrated capacity, so x1 and x2 shed nothing (the paper "
        "already gains 6% at x1), and our multiplier scales the whole cost of a "
        "comparison: x10 is a ~5x overload, where Fig. 11 gives 3-4x. The "
        "paper's 1.35x at x10 is close to our x4 (1.24x): its multiplier re-evaluates only "
        "the predicate, one part of a comparison's cost in its join. A fixed per-tuple "
        "cost does not explain it (x10 stays 3.0-3.2x with c_t = 300 or 3000). The earlier "
        "single-seed sweep's non-monotone x10 (2.25 < 2.45) was seed noise (2.25-2.88)."),
    "per_tuple_cost": (
        "Ours, not a figure of the paper: the sweeps above charge a tuple 1 cost unit "
        "besides its comparisons; a fixed cost c_t per admitted tuple, which no shedder "
        "avoids once it admits the tuple, is where the ratios fall towards the paper's "
        "and below 1 (the Fig. 11 notes)."),
}

#: the cause of each ratio target missed, in one line (the figure's ``notes`` in full)
CAUSES: dict[str, str] = {
    "aligned>=1.65x": "see figures.fig11_aligned.notes",
    "nonaligned>=2.5x": (
        "GrubJoin's throttle cuts z on every interval with queue drops and at the top "
        "rate single probes outlast the 10-tuple queue, so it uses about a third of the "
        "CPU (figures.fig11_nonaligned.notes; the peak, 4.3x at 350/s, is above 2.5x)"),
    "m5>=8x": (
        "5-way runs swing 2-4x between seeds and GrubJoin's throttle leaves CPU unused "
        "in the nonaligned runs (figures.fig13_nonaligned.notes)"),
    "kappa>=0.95x": "see figures.fig12.notes",
}
