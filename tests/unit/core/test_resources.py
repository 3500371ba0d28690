"""Where the data folders and the cache are: a checkout's, else the wheel's package data
and the user's cache folder; the HARVEST_* settings override both."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core import resources, settings
from pipeline.core.errors import InfraError
from pipeline.core.resources import cache_dir, data_dir, is_checkout, packaged, user_cache
from pipeline.core.settings import PROJECT_ROOT, Settings


def test_this_checkout_is_one_and_site_packages_is_not(tmp_path: Path) -> None:
    assert is_checkout(PROJECT_ROOT)
    assert not is_checkout(tmp_path)
    (tmp_path / "schemas").mkdir()
    assert not is_checkout(tmp_path)  # a schemas folder alone is not a checkout


def test_in_a_checkout_everything_stays_where_make_puts_it() -> None:
    s = Settings()
    assert s.schemas_dir == PROJECT_ROOT / "schemas"
    assert s.examples_dir == PROJECT_ROOT / "examples"
    assert s.infra_dir == PROJECT_ROOT / "infra"
    assert s.results_dir == PROJECT_ROOT / "bench" / "results"
    assert cache_dir(PROJECT_ROOT, {}, Path("/home/x")) == PROJECT_ROOT / ".cache"


def test_outside_a_checkout_the_cache_is_the_users(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert cache_dir(tmp_path, {}, home) == home / ".cache" / "harvest"
    assert user_cache({"XDG_CACHE_HOME": str(tmp_path / "xdg")}, home) == (
        tmp_path / "xdg" / "harvest")


def test_packaged_data_is_looked_up_in_the_installed_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InfraError, match=r"no data/schemas .*pip wheel --no-deps"):
        packaged("schemas")  # a checkout's package has no data/ folder
    with pytest.raises(InfraError, match="'jars' is not one of schemas, examples, infra"):
        packaged("jars")
    package = tmp_path / "pipeline"
    (package / "data" / "examples").mkdir(parents=True)
    monkeypatch.setattr(resources.resources, "files", lambda name: package)
    assert packaged("examples") == package / "data" / "examples"
    assert data_dir("examples", tmp_path) == package / "data" / "examples"


def test_settings_outside_a_checkout_use_package_data_and_the_user_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(settings, "PROJECT_ROOT", site)
    monkeypatch.setattr(resources, "packaged", lambda name: site / "pipeline" / "data" / name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("CACHE_DIR", "SCHEMAS_DIR", "EXAMPLES_DIR", "INFRA_DIR", "RESULTS_DIR"):
        monkeypatch.delenv(f"HARVEST_{name}", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    s = Settings()
    assert s.cache_dir == tmp_path / "home" / ".cache" / "harvest"
    assert s.jars_dir == s.cache_dir / "jars"
    assert s.results_dir == s.cache_dir / "results"
    assert s.schemas_dir == site / "pipeline" / "data" / "schemas"
    assert s.demo_spec == site / "pipeline" / "data" / "examples" / "specs" / "demo.toml"
    assert s.infra_dir == site / "pipeline" / "data" / "infra"


def test_harvest_variables_override_the_defaults(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CACHE_DIR", "SCHEMAS_DIR", "EXAMPLES_DIR", "INFRA_DIR"):
        monkeypatch.setenv(f"HARVEST_{name}", str(tmp_path / name.lower()))
    s = Settings()
    assert s.cache_dir == tmp_path / "cache_dir"
    assert s.schemas_dir == tmp_path / "schemas_dir"
    assert s.examples_dir == tmp_path / "examples_dir"
    assert s.infra_dir == tmp_path / "infra_dir"
    assert s.results_dir == PROJECT_ROOT / "bench" / "results"  # a checkout's, as before
