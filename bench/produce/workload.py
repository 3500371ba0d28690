"""The records `harvest bench produce` publishes: deterministic sensor readings."""

from __future__ import annotations

from typing import Any

SCHEMA = "sensor_reading"


def sensor_records(n: int, streams: int = 3) -> list[dict[str, Any]]:
    """Deterministic sensor records in arrival order (values like the sensors workload)."""
    return [
        {
            "stream": f"s{1 + i % streams}",
            "seq": i // streams,
            "event_time": 1_700_000_000_000 + 10 * i - (i * 7919) % 400,
            "arrival_time": 1_700_000_000_000 + 10 * i,
            "value": ((i * 2654435761) % 10_000) / 100.0,
            "a1": (i * 31) % 97,
            "x": (i % 1000) / 10.0,
            "y": (i % 777) / 7.0,
        }
        for i in range(n)
    ]
