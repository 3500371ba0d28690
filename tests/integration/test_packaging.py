"""The wheel carries what it needs: built with ``pip wheel --no-deps``, installed into a
fresh virtualenv in a temporary folder outside the checkout, it runs `harvest setup`
against a ``file://`` mirror of the jars (no network), then `harvest schema` and
`harvest join` on a packaged example spec, all from that folder, with the cache in the
user's cache folder."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from connectors.launch.jar_fetch import load_lock, missing_jars
from pipeline.core.settings import PROJECT_ROOT, load_settings

pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 300.0
         ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _mirror(root: Path) -> Path:
    """A Maven-layout mirror of the checkout's jars (symlinks)."""
    jars_dir = load_settings().jars_dir
    for name, jars in load_lock().items():
        for jar in jars:
            target = root / jar.repository_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(jars_dir / name / jar.file)
    return root


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A venv (in a temporary folder) with only the wheel installed; its dependencies
    come from this interpreter's site-packages through a ``.pth`` line."""
    tmp = tmp_path_factory.mktemp("packaging")
    isolation = [] if importlib.util.find_spec("hatchling") is None else [
        "--no-build-isolation"]
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *isolation,
          "-w", str(tmp / "dist"), str(PROJECT_ROOT)], tmp, dict(os.environ))
    wheel = next((tmp / "dist").glob("harvest_pipeline-*.whl"))
    venv = tmp / "v"
    _run([sys.executable, "-m", "venv", str(venv)], tmp, dict(os.environ))
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "harvest-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HARVEST_") and k not in ("PYTHONPATH", "XDG_CACHE_HOME",
                                                         "VIRTUAL_ENV")}
    env["HOME"] = str(tmp / "home")
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
          "--no-index", str(wheel)], tmp, env)
    work = tmp / "work"
    work.mkdir()
    return work, {**env, "PATH": f"{venv / 'bin'}:{env.get('PATH', '')}"}


def test_the_wheel_finds_its_data_outside_the_checkout(
        installed: tuple[Path, dict[str, str]]) -> None:
    work, env = installed
    code = ("import pipeline; from pipeline.core.settings import Settings; s = Settings(); "
            "print(pipeline.__file__); print(s.schemas_dir); print(s.demo_spec); "
            "print(s.infra_dir / 'kafka' / 'server.properties.template'); print(s.cache_dir)")
    lines = _run(["python", "-c", code], work, env).stdout.splitlines()
    package = Path(lines[0]).parent
    assert "site-packages" in str(package) and PROJECT_ROOT not in package.parents
    assert Path(lines[1]) == package / "data" / "schemas"
    assert (Path(lines[1]) / "join_result.avsc").is_file()
    assert Path(lines[2]).is_file() and Path(lines[3]).is_file()
    assert Path(lines[4]) == Path(env["HOME"]) / ".cache" / "harvest"


def test_setup_schema_and_join_from_any_folder(
        installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    work, env = installed
    if missing_jars(load_settings().jars_dir, load_lock()):
        pytest.skip("the checkout's jars are not all there (run `harvest setup`)")
    mirror = _mirror(tmp_path / "mirror").as_uri()
    cache = Path(env["HOME"]) / ".cache" / "harvest"
    out = _run(["harvest", "setup", "--repository", mirror, "--no-maven-local"],
               work, env).stdout
    assert "fetched 97 jars" in out and f"into {cache / 'jars'}, SHA-256 verified" in out
    assert "nothing to do" in _run(["harvest", "setup"], work, env).stdout
    schema = _run(["harvest", "schema", "--spec", "examples/specs/sensors.toml"], work, env)
    assert '"name": "join_result"' in schema.stdout
    _run(["harvest", "produce", "sensors", "--dry-run", "--duration", "20", "--rate", "40",
          "--lags", "0,5,15", "--dump", "in.jsonl"], work, env)
    joined = _run(["harvest", "join", "--spec", "examples/specs/sensors.toml", "--input",
                   "in.jsonl", "--output", "out.jsonl"], work, env)
    assert "results=" in joined.stdout
    assert (work / "out.jsonl").read_text().count("\n") > 0
    assert sorted(p.name for p in work.iterdir()) == ["in.jsonl", "out.jsonl"]
