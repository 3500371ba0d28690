"""connectors.launch.jar_fetch: the lock file, SHA-256 verification, sources and no-ops
of `harvest setup` (a ``file://`` mirror and a fake local Maven repository; no network)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import IO

import pytest

from connectors.launch.jar_fetch import (
    MAVEN_CENTRAL,
    LockedJar,
    Sources,
    load_lock,
    missing_jars,
    parse_lock,
    setup_jars,
)
from pipeline.core.errors import InfraError
from pipeline.core.settings import Settings
from pipeline.spark.session import REQUIRED_JARS


def _jar(coordinates: str, body: bytes) -> LockedJar:
    _, artifact, version = coordinates.split(":")
    return LockedJar(coordinates, f"{artifact}-{version}.jar", len(body),
                     hashlib.sha256(body).hexdigest())


BODIES = {"org.example:alpha:1.0": b"alpha jar bytes", "org.example.x:beta_2.13:2.1": b"beta"}
LOCK = {"kafka": (_jar("org.example:alpha:1.0", BODIES["org.example:alpha:1.0"]),),
        "spark": (_jar("org.example.x:beta_2.13:2.1", BODIES["org.example.x:beta_2.13:2.1"]),)}


def _repo(root: Path, bodies: dict[str, bytes] = BODIES) -> Path:
    """A Maven-layout repository holding ``bodies`` under their coordinates."""
    for jars in LOCK.values():
        for jar in jars:
            path = root / jar.repository_path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(bodies[jar.coordinates])
    return root


def _mirror(tmp_path: Path, bodies: dict[str, bytes] = BODIES) -> Sources:
    return Sources(repository=_repo(tmp_path / "mirror", bodies).as_uri())


def test_the_shipped_lock_pins_both_sets() -> None:
    lock = load_lock()
    assert set(lock) == {"kafka", "spark"}
    for jars in lock.values():
        files = [j.file for j in jars]
        assert len(files) == len(set(files))
        assert all(len(j.sha256) == 64 and int(j.sha256, 16) >= 0 for j in jars)
        assert all(j.coordinates.count(":") == 2 and j.size > 0 for j in jars)
    spark = [j.file for j in lock["spark"]]
    assert all(any(f.startswith(r) for f in spark) for r in REQUIRED_JARS)
    assert any(j.file == "kafka_2.13-4.4.0.jar" for j in lock["kafka"])
    assert any(j.coordinates == "org.apache.spark:spark-avro_2.13:4.2.0" for j in lock["spark"])


def test_the_shipped_lock_is_what_the_cache_holds() -> None:
    """The lock was written from the jars `make jars` fetched with Maven: the same files."""
    jars_dir = Settings().jars_dir
    if not (jars_dir / "kafka").is_dir():
        pytest.skip(f"no jars in {jars_dir} (run `harvest setup`)")
    assert missing_jars(jars_dir, load_lock()) == []
    for name, jars in load_lock().items():
        assert {p.name for p in (jars_dir / name).glob("*.jar")} == {j.file for j in jars}


def test_repository_path_is_the_maven_layout() -> None:
    assert LOCK["spark"][0].repository_path == "org/example/x/beta_2.13/2.1/beta_2.13-2.1.jar"


def test_a_malformed_lock_names_itself() -> None:
    with pytest.raises(InfraError, match="not a jar lock file"):
        parse_lock(json.dumps({"sets": {"kafka": [{"file": "x.jar"}]}}), "bad.json")


def test_setup_fetches_every_jar_then_is_a_no_op(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    sources = _mirror(tmp_path)
    report = setup_jars(jars, LOCK, sources)
    assert [(f.set, f.jar.file, f.origin) for f in report.fetched] == [
        ("kafka", "alpha-1.0.jar", sources.repository),
        ("spark", "beta_2.13-2.1.jar", sources.repository)]
    assert (jars / "kafka" / "alpha-1.0.jar").read_bytes() == b"alpha jar bytes"
    assert missing_jars(jars, LOCK) == []
    again = setup_jars(jars, LOCK, sources)
    assert not again.changed and again.present == 2


def test_a_corrupted_download_is_refused_and_not_installed(tmp_path: Path) -> None:
    bad = {**BODIES, "org.example.x:beta_2.13:2.1": b"tampered"}
    jars = tmp_path / "jars"
    with pytest.raises(InfraError, match=r"beta_2\.13-2\.1\.jar \(org\.example\.x:beta_2\.13:"
                       r"2\.1\) from file://.*SHA-256 [0-9a-f]{64} does not match the lock's "
                       r"[0-9a-f]{64}; refused"):
        setup_jars(jars, LOCK, _mirror(tmp_path, bad))
    assert not (jars / "spark" / "beta_2.13-2.1.jar").exists()
    assert not list((jars / "spark").glob("*.part"))
    assert (jars / "kafka" / "alpha-1.0.jar").is_file()  # what verified before it stays
    assert missing_jars(jars, LOCK) == ["spark/beta_2.13-2.1.jar"]


def test_a_corrupted_jar_in_the_cache_is_fetched_anew(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    sources = _mirror(tmp_path)
    setup_jars(jars, LOCK, sources)
    target = jars / "kafka" / "alpha-1.0.jar"
    target.write_bytes(b"alpha jar bytez")  # same size, other bytes
    assert missing_jars(jars, LOCK) == []  # the cheap check sees sizes only
    report = setup_jars(jars, LOCK, sources)
    assert report.replaced == ["kafka/alpha-1.0.jar"]
    assert target.read_bytes() == b"alpha jar bytes"


def test_jars_not_in_the_lock_are_removed(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    (jars / "spark").mkdir(parents=True)
    (jars / "spark" / "beta_2.13-2.0.jar").write_bytes(b"old version")
    (jars / "spark" / "notes.txt").write_text("kept")
    report = setup_jars(jars, LOCK, _mirror(tmp_path))
    assert report.removed == ["spark/beta_2.13-2.0.jar"]
    assert sorted(p.name for p in (jars / "spark").iterdir()) == ["beta_2.13-2.1.jar",
                                                                  "notes.txt"]


def test_the_local_maven_repository_comes_first_and_is_verified(tmp_path: Path) -> None:
    local = _repo(tmp_path / "m2", {**BODIES, "org.example.x:beta_2.13:2.1": b"corrupt"})
    sources = Sources(repository=_repo(tmp_path / "mirror").as_uri(), local_repo=local)
    report = setup_jars(tmp_path / "jars", LOCK, sources)
    assert [f.origin for f in report.fetched] == [str(local), sources.repository]
    assert (tmp_path / "jars" / "spark" / "beta_2.13-2.1.jar").read_bytes() == b"beta"


def test_an_unreachable_repository_says_what_is_needed(tmp_path: Path) -> None:
    def refuse(url: str, timeout: float) -> IO[bytes]:
        assert url.startswith(MAVEN_CENTRAL + "/org/example/alpha/1.0/")
        raise OSError("network is unreachable")

    with pytest.raises(InfraError, match=r"cannot download org\.example:alpha:1\.0 from "
                       r"https://.*network is unreachable.*Maven Central"):
        setup_jars(tmp_path / "jars", LOCK, Sources(opener=refuse))


def test_download_streams_through_the_opener(tmp_path: Path) -> None:
    def serve(url: str, timeout: float) -> IO[bytes]:
        name = url.rsplit("/", 1)[-1]
        body = {j.file: BODIES[j.coordinates] for js in LOCK.values() for j in js}[name]
        return io.BytesIO(body)

    report = setup_jars(tmp_path / "jars", LOCK, Sources(opener=serve), sets=("spark",))
    assert [f.jar.file for f in report.fetched] == ["beta_2.13-2.1.jar"]
    assert not (tmp_path / "jars" / "kafka").exists()
    with pytest.raises(InfraError, match="not in the lock"):
        setup_jars(tmp_path / "jars", LOCK, Sources(opener=serve), sets=("flink",))
