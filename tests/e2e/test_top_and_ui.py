"""`harvest top` and the Spark UI against a real `harvest submit`: while a short job runs,
the printed UI URL answers 200, the view (rendered to a recording console) shows non-zero
input and output rates and the instances' z, `harvest top --spec` on a pseudo-terminal
draws its table and quits on ``q``, and `harvest top --metrics-topic` without a terminal
prints JSON lines that parse, every result decoded."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from connectors.io.consumer import ConsumerConfig
from pipeline.app.top.live import follow
from pipeline.app.top.view import render
from pipeline.cli.top_cmd import spec_target
from pipeline.core.procs import Child
from pipeline.core.settings import PROJECT_ROOT, load_settings

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e, pytest.mark.slow]

SPEC = PROJECT_ROOT / "examples" / "specs" / "sensors.toml"


def _ui_answers(url: str, timeout_s: float = 30.0) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5.0) as response:
                return int(response.status)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _top_on_a_terminal(argv: list[str], env: dict[str, str], timeout_s: float = 120.0
                       ) -> str:
    """`harvest top` on an 80 x 24 pseudo-terminal: the screen it drew until its tables
    showed an instance (the sparkline columns), then ``q``; it must exit 0 within 10 s."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli.main", "top", *argv],
                            stdin=slave, stdout=slave, stderr=slave,
                            env={**env, "TERM": "xterm-256color"})
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + timeout_s
        while b"z history" not in _plain(seen) and time.monotonic() < deadline:
            seen += _read_some(master, 1.0)
            assert proc.poll() is None, _plain(seen).decode(errors="replace")[-3000:]
        assert b"z history" in _plain(seen), _plain(seen).decode(errors="replace")[-3000:]
        os.write(master, b"q")
        deadline = time.monotonic() + 10.0
        while proc.poll() is None and time.monotonic() < deadline:
            seen += _read_some(master, 0.2)
        assert proc.poll() == 0, f"q did not stop harvest top: {proc.poll()}"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    return _plain(seen).decode(errors="replace")


def _read_some(fd: int, timeout_s: float) -> bytes:
    ready, _, _ = select.select([fd], [], [], timeout_s)
    try:
        return os.read(fd, 65536) if ready else b""
    except OSError:  # the child closed the terminal
        return b""


def _plain(raw: bytes) -> bytes:
    """Terminal output without its escape sequences."""
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", raw)


def _lively(snap: dict[str, Any]) -> bool:
    """Rates, z and at least one committed micro-batch: a batch's results reach the topic
    before Spark writes its commit file, so the first snapshot with results can still
    count zero batches."""
    rows = snap["instances"]
    return bool(rows) and all(r["z"] is not None for r in rows) and any(
        (r["in_per_s"] or 0) > 0 for r in rows) and any(
        r["out_per_s"] > 0 for r in rows) and snap["live"] and snap["job"]["batches"] > 0


def test_top_follows_a_running_job_and_its_ui_answers(
        kafka_bootstrap: str, topic_prefix: str, tmp_path: Path) -> None:
    env = {"HARVEST_BOOTSTRAP_SERVERS": kafka_bootstrap, "HARVEST_TOPIC_PREFIX": topic_prefix}
    checkpoint = tmp_path / "ck"
    # the producer outlasts the 240 s wait for a lively snapshot (stopped at the end): on a
    # loaded machine a 90 s input ended, and the job went idle, before top saw it lively
    producer = Child("produce", [
        "produce", "sensors", "--streams", "3", "--rate", "60", "--duration", "300",
        "--lags", "0,5,15", "--speedup", "1", "--topic-prefix", topic_prefix], tmp_path, env)
    job = Child("submit", ["submit", "--spec", str(SPEC), "--master", "local[2]", "--ui",
                           "--checkpoint", str(checkpoint), "--until-idle", "30"],
                tmp_path, env)
    try:
        event = job.wait_for_event("spark ui", timeout_s=240.0)
        assert event["url"].startswith("http://127.0.0.1:")
        assert event["query"] == f"sensors-join-{topic_prefix}"
        assert _ui_answers(event["url"]) == 200
        assert _ui_answers(event["url"] + "/StreamingQuery/") == 200

        settings = load_settings(bootstrap_servers=kafka_bootstrap, topic_prefix=topic_prefix)
        args = type("Args", (), {"spec": SPEC, "topic_prefix": None,
                                 "checkpoint": str(checkpoint)})()
        target = spec_target(args, settings)  # type: ignore[arg-type]
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + 240.0

        def until_lively(seconds: float) -> bool:
            assert job.running(), job.tail()
            time.sleep(max(0.0, seconds))
            return (bool(seen) and _lively(seen[-1])) or time.monotonic() > deadline

        follow(target, ConsumerConfig.from_settings(settings, from_beginning=True),
               seen.append, until_lively)
        snap = seen[-1]
        assert _lively(snap), json.dumps(snap)[:2000]
        assert snap["job"]["lag"] is not None
        console = Console(record=True, width=240, color_system=None)
        console.print(render(snap, "harvest top: sensors"))
        text = console.export_text()
        row = snap["instances"][0]
        assert f"{row['z']:,.3f}" in text and "instance" in text and "out/s" in text

        screen = _top_on_a_terminal(["--spec", str(SPEC), "--checkpoint", str(checkpoint)],
                                    {**os.environ, **env})
        assert "harvest top: sensors" in screen and "micro-batches" in screen, screen[-3000:]
        frame = screen.replace("\r", "").split("harvest top: sensors")[-1]
        rows = [line.split() for line in frame.splitlines() if line[:1].isdigit()]
        # every number of an instance on 80 columns: nothing squeezed out
        assert any(len(r) == 9 and re.fullmatch(r"\d\.\d{3}", r[3]) for r in rows), frame

        lines = subprocess.run(
            [sys.executable, "-m", "pipeline.cli.main", "top", "--metrics-topic",
             f"{topic_prefix}.metrics", "--checkpoint", str(checkpoint), "--duration", "10",
             "--from-beginning"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, **env}, check=True).stdout.splitlines()
        # The first refresh reads the topics from the beginning and can take seconds on a
        # loaded machine; a 10 s run leaves room for a second line however long it takes.
        assert len(lines) >= 2
        parsed = [json.loads(line) for line in lines]
        last = parsed[-1]
        assert last["instances"] and last["totals"]["metrics"] > 0
        assert last["totals"]["results"] > 0 and last["totals"]["undecodable_results"] == 0
        assert all(r["z"] is not None for r in last["instances"])
        assert last["job"]["batches"] > 0 and last["job"]["lag"] is not None
    finally:
        producer.stop()
        job.stop()
