"""GrubJoin against tail drop in the soak's conditions (#15): a short experiment, not a
`harvest bench` target.

``python -m bench.soak.compare [--minutes 4] [--methods grubjoin,taildrop]`` (under the
bench lock) calibrates the capacity once (:func:`pipeline.app.demo.calibrate`), then runs
:func:`bench.soak.main.run` for each method in turn — the demo workload at 2× that capacity,
real Kafka + Spark, the same input rate, seed and spec apart from ``[shedding] mode`` —
and writes ``bench/results/soak_compare.json``: each run's per-minute rows and, per
method, the mean output rate from minute 2 on (the first minute fills the 60 s windows)
and its ratio to tail drop's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.kit.output import RESULTS_DIR, write_json
from pipeline.core.settings import Settings

FIRST_MINUTE = 2


def summarize(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Mean output rate (results/s) of minutes ≥ 2 per method, and each over tail drop's."""
    means: dict[str, float] = {}
    for method, payload in runs.items():
        rates = [float(r["output_rate"]) for r in payload["rows"]
                 if int(r["minute"]) >= FIRST_MINUTE]
        means[method] = statistics.fmean(rates) if rates else 0.0
    base = means.get("taildrop")
    return {"output_rate_from_minute_2": means,
            "over_taildrop": ({m: v / base for m, v in means.items()} if base else {})}


def run(minutes: float, methods: Sequence[str], results_dir: Path,
        settings: Settings) -> dict[str, Any]:
    """Calibrate once, soak each method for ``minutes``; write and return the comparison."""
    from bench.pipeline.workload import measure_capacity
    from bench.soak.main import run as soak
    from bench.soak.plan import SEED

    cap = measure_capacity(settings, 1.0, SEED)
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for m in methods:
            soak(True, Path(tmp), settings, minutes, method=m, capacity=cap,
                     name=f"cmp_{m}")
            runs[m] = json.loads((Path(tmp) / f"cmp_{m}.json").read_text())
    payload = {"minutes": minutes, "methods": list(methods), **summarize(runs),
               "runs": runs}
    write_json("soak_compare", payload, results_dir)
    return payload


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak.compare", description=__doc__)
    p.add_argument("--minutes", type=float, default=4.0)
    p.add_argument("--methods", default="grubjoin,taildrop")
    args = p.parse_args(argv)
    out = run(args.minutes, args.methods.split(","), RESULTS_DIR, Settings())
    print(json.dumps({k: out[k] for k in ("output_rate_from_minute_2", "over_taildrop")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
