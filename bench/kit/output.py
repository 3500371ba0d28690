"""A benchmark's output files: ``<results_dir>/<name>.json`` (with the machine it ran on)
and ``<name>.png``."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

#: bench/results: where the ``python -m bench.<x>.<y>`` experiments write
RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    import os

    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_json(name: str, payload: dict[str, Any], results_dir: Path) -> Path:
    """Write ``<results_dir>/<name>.json`` (pretty, with machine info) and return its path."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    body = {"benchmark": name, "machine": machine_info(), **payload}
    path.write_text(json.dumps(body, indent=2, sort_keys=False, default=float) + "\n")
    return path


def read_payload(name: str, results_dir: Path,
                 header: tuple[str, ...] = ("benchmark", "machine")) -> dict[str, Any]:
    """What :func:`write_json` wrote to ``<results_dir>/<name>.json``, without the
    ``header`` keys it added (a run that only derives again keeps ``machine``: the
    machine and time of the measurement); {} when there is none or it is not a JSON
    object."""
    try:
        data = json.loads((results_dir / f"{name}.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if k not in header}


def save_figure(fig: Any, name: str, results_dir: Path) -> Path:
    """Save a matplotlib figure as ``<results_dir>/<name>.png`` and close it."""
    import matplotlib.pyplot as plt

    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
