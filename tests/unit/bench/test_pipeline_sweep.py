"""The sweep report of `harvest bench pipeline` (issue 28) against hand-computed values:
the summary, the targets, the zero-output windows, the profile rows, the plan of
``--only`` parts and the timeline's 10 s buckets."""

from __future__ import annotations

from typing import Any

import pytest

from bench.kit.profile import phase_seconds, python_profile
from bench.pipeline.main import plan
from bench.pipeline.measure import timeline
from bench.pipeline.profile import profile_rows
from bench.pipeline.report import (
    compare_rows,
    judge_targets,
    median_run,
    summary,
    zero_output_windows,
)
from pipeline.core.errors import ConfigError

BOUND = 24_000.0
S, N, P = "sensors-nonaligned", "news-cosine", "positions-distance"


def row(workload: str, load: float, method: str, out: float, *, recall: float = 0.5,
        p99: float | None = 10_000.0, precision: float = 1.0,
        ours: list[float] | None = None) -> dict[str, Any]:
    true = [100.0] * 7
    return {"workload": workload, "load": load, "method": method, "output_rate": out,
            "input_rate": 1000.0 * load, "recall": recall, "p99_ms": p99,
            "precision": precision, "window_s": 20.0,
            "timeline": {"t_s": [10.0 * i for i in range(7)],
                         "ours": ours if ours is not None else [50.0] * 7, "true": true}}


def sweep(gain: dict[tuple[str, float], float]) -> list[dict[str, Any]]:
    """grubjoin at ``gain[(w, load)]`` × 100 results/s, taildrop 100, static 80."""
    rows = []
    for (w, load), g in gain.items():
        rows += [row(w, load, "grubjoin", 100.0 * g, recall=0.6 if load < 3 else 0.35),
                 row(w, load, "taildrop", 100.0), row(w, load, "randomdrop-static", 80.0)]
    return rows


ALL_GOOD = {(w, load): (2.5 if load == 2.0 else 1.2) for w in (S, N, P)
            for load in (1.5, 2.0, 3.0)}


def test_summary_per_workload_and_load_over_the_best_baseline_within_the_bound() -> None:
    rows = [row(S, 2.0, "grubjoin", 300.0), row(S, 2.0, "taildrop", 400.0, p99=30_000.0),
            row(S, 2.0, "randomdrop-static", 150.0), row(S, 2.0, "off", 900.0),
            row(N, 1.5, "grubjoin", 60.0), row(N, 1.5, "taildrop", 40.0)]
    got = {(s["workload"], s["load"]): s for s in summary(compare_rows(rows, BOUND))}
    assert got[(S, 2.0)]["best_baseline"] == "randomdrop-static"  # taildrop over the bound
    assert got[(S, 2.0)]["ratio_vs_best_baseline"] == 2.0
    assert got[(S, 2.0)]["best_output_rate"] == 150.0
    assert got[(N, 1.5)]["ratio_vs_best_baseline"] == 1.5
    assert set(got) == {(S, 2.0), (N, 1.5)}


def test_all_targets_met() -> None:
    targets, why = judge_targets(compare_rows(sweep(ALL_GOOD), BOUND), BOUND)
    assert all(targets.values()), why
    assert why == {}


def test_targets_missed_say_where_and_by_how_much() -> None:
    gains = {**ALL_GOOD, (S, 2.0): 1.8, (N, 3.0): 0.9}
    rows = sweep(gains)
    for r in rows:
        if r["workload"] == P and r["method"] == "grubjoin" and r["load"] == 3.0:
            r["recall"] = 0.25  # < 0.5 × 0.6
            r["p99_ms"] = 30_000.0
        if r["workload"] == N and r["method"] == "taildrop" and r["load"] == 1.5:
            r["precision"] = 0.99
    targets, why = judge_targets(compare_rows(rows, BOUND), BOUND)
    assert targets == {"grubjoin>=best_baseline_everywhere": False, "gain_at_2x": False,
                       "no_cliff_at_3x": False, "no_zero_output_window": True,
                       "p99<=3x_trigger": False, "precision==1": False,
                       "no_output_collapse_at_3x": True}
    assert why["grubjoin>=best_baseline_everywhere"] == "news-cosine 3×: 0.90x vs taildrop"
    assert why["gain_at_2x"] == "sensors-nonaligned: 1.80x (needs 2x)"
    # the positions 3× run is over the bound: its best baseline is taildrop still
    assert why["no_cliff_at_3x"] == (
        "positions-distance: recall 0.250 at 3× < 0.5 × 0.600 at 1.5×")
    assert why["p99<=3x_trigger"] == (
        "grubjoin p99 over 24000 ms: positions-distance 3×: 30000 ms")
    assert why["precision==1"] == "news-cosine taildrop 1.5×: 0.9900"


def test_points_not_measured_miss_the_targets_that_need_them() -> None:
    rows = sweep({(S, 2.0): 2.5})
    targets, why = judge_targets(compare_rows(rows, BOUND), BOUND)
    assert targets["grubjoin>=best_baseline_everywhere"] and not targets["gain_at_2x"]
    assert why["gain_at_2x"] == "news-cosine: not measured (needs 1.5x); " \
        "positions-distance: not measured (needs 1.5x)"
    assert why["no_cliff_at_3x"] == "sensors-nonaligned: not measured at both 1.5× and 3×"
    assert judge_targets([], BOUND)[1]["grubjoin"] == "no grubjoin run: nothing judged"


@pytest.mark.parametrize(
    ("ours", "true", "zeros"),
    [
        ([5, 5, 5, 5, 5, 5, 5], [9] * 7, []),
        # before the first full window (20 s) a zero does not count
        ([0, 0, 5, 5, 5, 5, 5], [9] * 7, []),
        ([5, 5, 5, 0, 0, 5, 5], [9] * 7, [30.0, 40.0]),
        # no true results in the bucket: nothing to emit
        ([5, 5, 5, 0, 5, 5, 5], [9, 9, 9, 0, 9, 9, 9], []),
        # the trailing partial bucket (the input ended inside it) is left out
        ([5, 5, 5, 5, 5, 5, 0], [9, 9, 9, 9, 9, 9, 2], []),
        ([5, 5, 5, 5, 5, 5, 0], [9] * 7, [60.0]),
    ],
)
def test_zero_output_windows(ours: list[float], true: list[float], zeros: list[float]) -> None:
    r = {"window_s": 20.0, "timeline": {"t_s": [10.0 * i for i in range(len(ours))],
                                        "ours": ours, "true": true}}
    assert zero_output_windows(r) == zeros


def test_a_zero_output_window_misses_the_target() -> None:
    rows = sweep(ALL_GOOD)
    gj = next(r for r in rows if r["method"] == "grubjoin" and r["workload"] == N
              and r["load"] == 2.0)
    gj["timeline"]["ours"] = [50.0, 50.0, 50.0, 0.0, 50.0, 50.0, 50.0]
    targets, why = judge_targets(compare_rows(rows, BOUND), BOUND)
    assert not targets["no_zero_output_window"]
    assert why["no_zero_output_window"] == "news-cosine 2×: none at 30 s"


def test_python_profile_sums_the_last_record_of_each_instance_stretch() -> None:
    metrics = [
        {"instance": "0", "extra": {"profile_us_input": 1.0, "profile_tuples": 10.0}},
        {"instance": "0", "extra": {"profile_us_input": 2.0, "profile_us_probing": 8.0,
                                    "profile_us_unsheddable": 2.0,
                                    "profile_tuples": 1000.0}},
        {"instance": "1", "extra": {"profile_us_input": 4.0, "profile_tuples": 500.0}},
        {"instance": "2", "extra": {"z": 1.0}},
    ]
    got = python_profile(metrics)
    assert got is not None and got["tuples"] == 1500
    # instance 0: 2 µs × 1000 = 2 ms; instance 1: 4 µs × 500 = 2 ms
    assert got["seconds"] == pytest.approx({"input": 0.004, "probing": 0.008})
    assert python_profile([{"instance": "0", "extra": {}}]) is None


def test_python_profile_counts_every_stretch_of_an_instance_reloaded_from_state() -> None:
    """A worker that loads the instance from the state store starts a fresh profile: the
    stretch before it still counts."""
    metrics = [
        {"instance": "0", "extra": {"profile_us_input": 1.0, "profile_tuples": 100.0}},
        {"instance": "1", "extra": {"profile_us_input": 3.0, "profile_tuples": 50.0}},
        {"instance": "0", "extra": {"profile_us_input": 2.0, "profile_tuples": 400.0}},
        {"instance": "0", "extra": {"profile_us_input": 5.0, "profile_tuples": 30.0}},
        {"instance": "0", "extra": {"profile_us_input": 4.0, "profile_tuples": 60.0}},
    ]
    got = python_profile(metrics)
    assert got is not None and got["tuples"] == 400 + 60 + 50
    # 2 µs × 400 + 4 µs × 60 + 3 µs × 50 = 1,190 µs
    assert got["seconds"] == pytest.approx({"input": 0.00119})


def test_profile_rows_python_per_admitted_tuple_jvm_per_input_row() -> None:
    run = {"workload": S, "method": "grubjoin", "load": 2.0,
           "python_profile": {"tuples": 1000, "seconds": {"input": 0.002, "probing": 0.006}},
           "jvm_ms": {"addBatch": 20.0, "walCommit": 4.0, "triggerExecution": 30.0},
           "jvm_rows": 2000}
    # addBatch 20 ms − Python's 8 ms = 12 ms of JVM execution; triggerExecution is a total
    assert phase_seconds(run["python_profile"], run["jvm_ms"]) == pytest.approx(  # type: ignore[arg-type]
        {"input": 0.002, "probing": 0.006, "jvm_execution": 0.012, "jvm_walCommit": 0.004})
    got = {r["phase"]: r for r in profile_rows(run)}
    assert got["input"]["us_per_tuple"] == 2.0 and got["probing"]["us_per_tuple"] == 6.0
    assert got["jvm_execution"]["us_per_tuple"] == 6.0  # 12 ms / 2000 rows
    assert got["jvm_walCommit"]["us_per_tuple"] == 2.0
    assert got["probing"]["share"] == 0.25  # 6 of 24 ms
    assert sum(r["share"] for r in got.values()) == pytest.approx(1.0)
    assert set(got["input"]) == {"workload", "method", "load", "phase", "us_per_tuple",
                                 "share"}
    jvm_only = profile_rows({**run, "python_profile": None})
    assert {r["phase"] for r in jvm_only} == {"jvm_execution", "jvm_walCommit"}


def test_timeline_buckets_are_10_s_of_stream_time_by_completion() -> None:
    appended = {("s1", 1): 1_000, ("s2", 1): 4_000, ("s1", 2): 12_000, ("s2", 2): 25_000}
    truth = {"a": [("s1", 1), ("s2", 1)], "b": [("s1", 2), ("s2", 1)],
             "c": [("s1", 2), ("s2", 2)]}
    correct = {"a": truth["a"], "c": truth["c"]}
    # completions 4 s, 12 s, 25 s after the first input at 1 s: buckets 0, 1, 2
    tl = timeline(correct, truth, appended, first=1_000.0)
    assert tl == {"t_s": [0.0, 10.0, 20.0], "ours": [1.0, 0.0, 1.0],
                  "true": [1.0, 1.0, 1.0]}
    # at 2× replay a 10 s bucket of stream time is 5 s of append time: 3, 11, 24 s → 0, 2, 4
    assert timeline(correct, truth, appended, 1_000.0, speedup=2.0)["ours"] == [
        1.0, 0.0, 0.0, 0.0, 1.0]


def test_plan_of_only_parts() -> None:
    full = plan(False)
    assert len(full) == 30
    assert sum(p.method == "off" for p in full) == 3
    assert {p.load for p in full if p.method == "off"} == {2.0}
    quick = plan(True)
    assert [(p.workload.name, p.load) for p in quick] == [(S, 2.0), (S, 2.0)]
    one = plan(False, "news-cosine:3")
    assert [(p.workload.name, p.load, p.method) for p in one] == [
        (N, 3.0, "grubjoin"), (N, 3.0, "randomdrop-static"), (N, 3.0, "taildrop")]
    assert [p.method for p in plan(False, f"{P}:2:off, {S}:1.5:taildrop")] == [
        "off", "taildrop"]
    assert len(plan(False, P)) == 10
    with pytest.raises(ConfigError, match="load 4 of 'news-cosine:4' is not one of"):
        plan(False, "news-cosine:4")
    with pytest.raises(ConfigError, match="no workload 'sweeps'"):
        plan(False, "sweeps")
    with pytest.raises(ConfigError, match="is not workload"):
        plan(False, "news-cosine:2:nope")


def test_a_repeated_point_is_its_median_run_with_every_run_beside_it() -> None:
    runs = [{"output_rate": r, "recall": r / 10, "p99_ms": 1.0, "batch_ms_p50": 2.0,
             "results": int(r), "method": "grubjoin"} for r in (8.0, 2.0, 6.0, 4.0)]
    row = median_run(runs)
    assert row["output_rate"] == 4.0 and row["recall"] == 0.4  # lower of the middle two
    assert row["median_of"] == 4
    assert [r["output_rate"] for r in row["runs"]] == [8.0, 2.0, 6.0, 4.0]
    assert median_run([runs[0]])["output_rate"] == 8.0
    assert median_run([row, runs[1], runs[2]])["runs"][0]["output_rate"] == 4.0


def test_each_repeated_run_names_its_windows_without_output() -> None:
    """Every run beside the median row carries its own zero-output windows, so one
    the median run does not show is still in the JSON."""
    def run(rate: float, ours: list[float]) -> dict[str, object]:
        return {"output_rate": rate, "recall": 0.1, "p99_ms": 1.0, "batch_ms_p50": 2.0,
                "results": 1, "stale": 7, "method": "grubjoin", "window_s": 10.0,
                "timeline": {"t_s": [0.0, 10.0, 20.0, 30.0, 40.0],
                             "ours": ours, "true": [5.0, 5.0, 5.0, 5.0, 1.0]}}
    row = median_run([run(3.0, [1.0, 0.0, 2.0, 2.0, 0.0]), run(5.0, [1.0, 2.0, 2.0, 2.0, 1.0]),
                      run(1.0, [0.0, 2.0, 0.0, 2.0, 1.0])])
    assert [r["zero_windows"] for r in row["runs"]] == [[10.0], [], [20.0]]
    assert row["runs"][0]["stale"] == 7 and row["output_rate"] == 3.0


def test_a_point_whose_baselines_all_miss_the_latency_bound_says_so() -> None:
    rows = [r for r in sweep(ALL_GOOD) if not (r["workload"] == P and r["load"] == 1.5)]
    rows += [row(P, 1.5, "grubjoin", 80.0), row(P, 1.5, "taildrop", 120.0, p99=30_000.0)]
    targets, why = judge_targets(compare_rows(rows, BOUND), BOUND)
    assert not targets["grubjoin>=best_baseline_everywhere"]
    assert why["grubjoin>=best_baseline_everywhere"] == (
        "positions-distance 1.5×: no baseline within the latency bound")


def test_a_capacity_measured_on_other_generator_arguments_is_measured_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``--only`` point keeps the earlier run's capacity only if that run had the same
    workload (generator arguments, window, ε: a changed one is another workload)."""
    import bench.pipeline.main as main
    from bench.pipeline.workload import workload_named
    from pipeline.core.settings import Settings

    wl = workload_named("positions-distance")
    probed: list[str] = []

    class Probe:
        def describe(self) -> str:
            return "probe"

        def snapshot(self) -> dict[str, Any]:
            return {"capacity_rate": 123.0}

    def probe(w: Any, settings: Any) -> Probe:
        probed.append(w.name)
        return Probe()

    monkeypatch.setattr(main, "workload_capacity", probe)
    same = {wl.name: {"capacity_rate": 50.0, "definition": wl.definition()}}
    assert main._capacity(wl, same, Settings()) == 50.0 and probed == []
    other = {wl.name: {"capacity_rate": 50.0, "definition": ["positions"]}}
    assert main._capacity(wl, other, Settings()) == 123.0 and probed == [wl.name]
    assert other[wl.name]["definition"] == wl.definition()
    assert main._capacity(wl, {}, Settings()) == 123.0 and len(probed) == 2


def test_output_that_halves_from_1_5x_to_3x_is_a_collapse() -> None:
    """``no_output_collapse_at_3x`` (ours): the output rate at 3× against 1.5×'s; the
    recall target is judged apart (a lower recall alone is no collapse)."""
    rows = sweep({**ALL_GOOD, (N, 3.0): 0.55})  # 55 results/s at 3× < 0.5 × 120 at 1.5×
    targets, why = judge_targets(compare_rows(rows, BOUND), BOUND)
    assert not targets["no_output_collapse_at_3x"]
    assert why["no_output_collapse_at_3x"] == (
        "news-cosine: 55 results/s at 3× < 0.5 × 120 at 1.5×")
    assert targets["no_cliff_at_3x"]  # recall 0.35 ≥ 0.5 × 0.6
    ok, _ = judge_targets(compare_rows(sweep(ALL_GOOD), BOUND), BOUND)
    assert ok["no_output_collapse_at_3x"]


def test_only_positions_grubjoin_prices_its_results() -> None:
    """Each method at its own best setting: GrubJoin on positions charges RESULT_US per
    result; its baselines and the other workloads' GrubJoin do not."""
    from bench.pipeline.workload import RESULT_US, workload_named
    from pipeline.core.settings import Settings

    settings = Settings()
    pos = workload_named(P)
    assert pos.spec("grubjoin", settings).shedding.result_us == RESULT_US > 0
    assert pos.spec("taildrop", settings).shedding.result_us == 0.0
    assert pos.spec("randomdrop-static", settings).shedding.result_us == 0.0
    assert workload_named(S).spec("grubjoin", settings).shedding.result_us == 0.0


def _instance_part(us: dict[str, float]) -> dict[str, Any]:
    from bench.pipeline.instance import unsheddable_us

    rows = [{"phase": p, "us_per_tuple": v, "share": 0.0, "sheddable": p == "probing"}
            for p, v in us.items()]
    return {"rows": rows, "unsheddable_us": unsheddable_us(rows), "target_us": 10.0}


def test_unsheddable_work_is_every_phase_but_probing() -> None:
    from bench.pipeline.instance import unsheddable_us

    rows = [{"phase": "input", "us_per_tuple": 1.5}, {"phase": "probing", "us_per_tuple": 90.0},
            {"phase": "results", "us_per_tuple": 2.25}]
    assert unsheddable_us(rows) == 3.75


def test_instance_profile_target_in_the_payload() -> None:
    """The instance part is judged when measured (met at ≤ 10 µs; missed naming the largest
    phases), kept in the JSON, and not judged at all when there is none."""
    from bench.pipeline.instance import TARGET
    from bench.pipeline.report import payload

    rows = sweep(ALL_GOOD)
    fine = payload(rows, {}, False, 1.0, 150.0, _instance_part({"input": 4.0, "results": 5.9,
                                                                  "probing": 100.0}))
    assert fine["targets_met"][TARGET] and TARGET not in fine["targets_missed_why"]
    assert fine["instance_profile"]["unsheddable_us"] == 9.9
    over = payload(rows, {}, False, 1.0, 150.0, _instance_part({"input": 4.0, "results": 6.5,
                                                                  "probing": 100.0}))
    assert not over["targets_met"][TARGET]
    assert over["targets_missed_why"][TARGET].startswith("10.50 µs per admitted tuple > 10")
    assert "results 6.50, input 4.00" in over["targets_missed_why"][TARGET]
    none = payload(rows, {}, False, 1.0, 150.0)
    assert TARGET not in none["targets_met"] and "instance_profile" not in none
