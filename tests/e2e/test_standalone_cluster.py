"""Test d: the exactness check on a Spark standalone cluster (master + worker).

Producers → Kafka → `harvest submit --master spark://...` (ATR routing over 2 route
keys, K ≥ max delay, shedding off) → Kafka → consumer, compared with the DuckDB oracle
on the producer's dump: recall = precision = 1, no duplicates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.cli.main import main as harvest
from pipeline.core.jsonl import read_jsonl
from pipeline.quality.oracle import oracle
from pipeline.spark.cluster import ClusterConfig, StandaloneCluster
from pipeline.spec.model import load_spec

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e, pytest.mark.slow]

SPEC = """
[join]
streams = ["s1", "s2", "s3"]
window_ms = 20000
predicate = "band"
attribute = "value"
epsilon = 1.0

[disorder]
mode = "fixed"
slack_ms = 2500

[shedding]
mode = "off"
basic_window_ms = 2000

[job]
workload = "sensors"
routing = "atr"
groups = 2
segment_ms = 5000
topic_prefix = "{prefix}"
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A master + one worker (2 cores) of its own, on free ports when 7077/8080 are taken."""
    state = tmp_path_factory.mktemp("spark-cluster")
    sc = StandaloneCluster(
        ClusterConfig(state_dir=state, master_port=17077, webui_port=18080,
                      worker_webui_port=18081, worker_cores=2, worker_memory="2g",
                      timeout_s=180.0)
    )
    status = sc.up()
    assert status.running and status.workers_alive == 1 and status.cores == 2
    assert status.master_url is not None and status.master_url.startswith("spark://127.0.0.1:")
    try:
        yield status.master_url
    finally:
        assert sc.down()
        assert not sc.status().running


def _cli(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli.main", *args],
        env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )


def test_exactness_on_standalone_cluster(
    cluster: str, kafka_bootstrap: str, topic_prefix: str, tmp_path: Path
) -> None:
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SPEC.format(prefix=topic_prefix))
    dump = tmp_path / "in.jsonl"
    env = {**os.environ, "HARVEST_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "HARVEST_TOPIC_PREFIX": topic_prefix}
    os.environ["HARVEST_BOOTSTRAP_SERVERS"] = kafka_bootstrap
    try:
        code = harvest([
            "produce", "sensors", "--streams", "3", "--rate", "10", "--duration", "30",
            "--lags", "0,5,15", "--kappas", "2,2,50", "--disorder", "zipf:max=2000,skew=2",
            "--fast", "--dump", str(dump), "--topic-prefix", topic_prefix,
        ])
    finally:
        del os.environ["HARVEST_BOOTSTRAP_SERVERS"]
    assert code == 0
    records = read_jsonl(dump)
    assert max(r["arrival_time"] - r["event_time"] for r in records) <= 2500  # K ≥ max delay

    submitted = _cli(["submit", "--spec", str(spec_path), "--master", cluster,
                      "--until-idle", "8"], env, timeout=600)
    assert submitted.returncode == 0, submitted.stderr[-3000:]
    report = json.loads(submitted.stdout.strip().splitlines()[-1])
    assert report["input_rows"] == len(records)

    consumed = _cli(["consume", f"{topic_prefix}.results", "--format", "jsonl",
                     "--from-beginning", "--timeout", "10"], env, timeout=120)
    assert consumed.returncode == 0, consumed.stderr[-2000:]
    got = Counter(json.loads(line)["id"] for line in consumed.stdout.splitlines() if line)

    truth = {r.id for r in oracle(load_spec(spec_path).join, records)}
    assert truth, "the workload must have results for the check to mean anything"
    assert max(got.values(), default=1) == 1, "duplicate results"
    assert set(got) == truth  # recall = precision = 1
