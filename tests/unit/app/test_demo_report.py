"""The demo's summary numbers and per-second rates (table-driven, brute-force checked)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.app.demo import DemoConfig
from pipeline.app.demo_report import metric_series, per_second, plot, summarize
from pipeline.core.errors import ConfigError


@settings(max_examples=50, deadline=None)
@given(times=st.lists(st.integers(0, 9_999), max_size=60), bucket=st.sampled_from([1, 2, 5]))
def test_per_second_matches_counting(times: list[int], bucket: int) -> None:
    rates = per_second(times, 0, 10, bucket)
    for i, rate in enumerate(rates):
        lo, hi = i * bucket * 1000, (i + 1) * bucket * 1000
        assert rate == sum(lo <= t < hi for t in times) / bucket


def test_metric_series_groups_by_instance_and_sorts() -> None:
    rows = [{"instance": "1", "time": 20, "z": 0.5}, {"instance": "0", "time": 10, "z": 1.0},
            {"instance": "1", "time": 10, "z": 0.7}, {"instance": "0", "time": 5, "z": None}]
    assert metric_series(rows, "z") == {"0": [(10, 1.0)], "1": [(10, 0.7), (20, 0.5)]}
    # once the shedder's rows (with harvest fractions) exist, only they give z
    rows.append({"instance": "1", "time": 30, "z": 0.2, "harvest_fractions": [0.2, 0.1]})
    assert metric_series(rows, "z") == {"1": [(30, 0.2)]}
    assert metric_series(rows, "time") == {"0": [(5, 5.0), (10, 10.0)],
                                           "1": [(10, 10.0), (20, 20.0), (30, 30.0)]}


def _run() -> SimpleNamespace:
    dump = [{"stream": "s1", "seq": i, "event_time": i * 100, "arrival_time": i * 100}
            for i in range(100)]
    truth = [{"id": f"r{i}", "result_time": i * 100} for i in range(10)]
    results = [{"id": f"r{i}", "result_time": i * 100} for i in (0, 1, 2, 3, 3)]
    metrics = [{"instance": "0", "time": 1000 * i, "z": 1.0 - 0.1 * i, "k_ms": 50 * i}
               for i in range(5)]
    return SimpleNamespace(prefix="demoX", rate=10.0, produced=len(dump), spark_input=100,
                           spark_results=5, results=results, metrics=metrics, dump=dump,
                           truth=truth, capacity=None, timings={"job_s": 1.0})


def test_summarize_counts_recall_precision_duplicates() -> None:
    s = summarize(_run(), duration_s=10.0)
    assert (s["true_results"], s["distinct_results"], s["duplicates"]) == (10, 4, 1)
    assert s["recall"] == pytest.approx(0.4) and s["precision"] == 1.0
    assert s["results_per_s"] == pytest.approx(0.4)
    assert s["z_min"] == pytest.approx(0.6) and s["k_ms_max"] == 200.0
    assert s["input_tuples_per_s"] == 10.0


def test_plot_writes_png(tmp_path: Path) -> None:
    paths = [tmp_path / "a.png", tmp_path / "b" / "c.png"]
    plot(_run(), paths)
    assert all(p.stat().st_size > 1000 for p in paths)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"duration_s": 0}, "duration_s"), ({"speedup": -1}, "speedup"), ({"rate": 0.0}, "--rate")],
)
def test_demo_config_rejects_bad_values(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        DemoConfig(**kwargs)  # type: ignore[arg-type]


def test_timeline_per_10_s_of_stream_time() -> None:
    from pipeline.app.demo_report import timeline

    run = _run()  # input over 0–9.9 s: one bucket of 10 s, then the +1 s of the span
    run.dump += [{"stream": "s1", "seq": 100 + i, "event_time": 10_000 + i * 1000,
                  "arrival_time": 10_000 + i * 1000} for i in range(15)]
    run.truth += [{"id": "r20", "result_time": 12_000}, {"id": "r21", "result_time": 21_000}]
    run.results += [{"id": "r20", "result_time": 12_000}]
    run.metrics += [{"instance": "0", "time": 15_000, "z": 0.2, "k_ms": 300}]
    got = timeline(run)
    # results r0..r3 (r3 twice: counted once) at 0–0.3 s; r20 at 12 s; truth r0..r9, r20, r21
    assert got == [
        {"t_s": 0, "results": 4, "true_results": 10, "z": 0.8, "k_ms": 100.0},
        {"t_s": 10, "results": 1, "true_results": 1, "z": 0.2, "k_ms": 300.0},
        {"t_s": 20, "results": 0, "true_results": 1, "z": None, "k_ms": None},
    ]
    assert timeline(SimpleNamespace(dump=[])) == []


def test_legend_names_the_method_in_use() -> None:
    from pipeline.app.demo_report import method_label
    from pipeline.core.settings import Settings
    from pipeline.spec.model import load_spec
    from pipeline.spec.toml import with_overrides

    spec = load_spec(Settings().demo_spec)
    assert method_label(spec) == "GrubJoin + quality K"
    assert method_label(with_overrides(spec, shedding={"mode": "taildrop"})) == (
        "tail drop + quality K")
    assert method_label(None) == "the job"
