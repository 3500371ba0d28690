"""`harvest setup`: the broker and connector jars fetched from Maven Central and verified.

The lock file ``jars.lock.json`` (package data beside this module, written by
``infra/maven/write_lock.py`` from ``infra/maven/pom.xml``) lists every jar of the two
sets: ``kafka`` (the KRaft broker, its tools and log4j2) and ``spark`` (spark-sql-kafka,
spark-token-provider-kafka, spark-avro and their dependencies that the pyspark wheel
does not ship), each with its Maven coordinates, size and SHA-256. :func:`setup_jars`
puts exactly these files into ``<jars_dir>/<set>/``: a file already there is kept when
its SHA-256 matches; otherwise it is copied from the local Maven repository
(``~/.m2/repository``, when Maven has fetched it before) or downloaded from the
repository (Maven Central over HTTPS, or any ``file://`` mirror with the same layout).
A file whose SHA-256 differs from the lock is refused (:class:`InfraError` naming the
file, both checksums and where it came from) and never installed. Jars not in the lock
are removed from the set's folder: every ``*.jar`` there is on a classpath.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO

from connectors.launch.service import locked
from pipeline.core.errors import InfraError
from pipeline.core.logging import get_logger

log = get_logger(__name__)

LOCK_FILE = "jars.lock.json"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
_CHUNK = 1 << 20

Opener = Callable[[str, float], IO[bytes]]


def _open_url(url: str, timeout: float) -> IO[bytes]:
    response: IO[bytes] = urllib.request.urlopen(url, timeout=timeout)
    return response


@dataclass(frozen=True)
class LockedJar:
    """One jar of the lock: ``group:artifact:version``, its file name, size and SHA-256."""

    coordinates: str
    file: str
    size: int
    sha256: str

    @property
    def repository_path(self) -> str:
        """The jar's path in a Maven repository layout.

        >>> LockedJar("org.apache.kafka:kafka_2.13:4.4.0", "kafka_2.13-4.4.0.jar", 1,
        ...           "0" * 64).repository_path
        'org/apache/kafka/kafka_2.13/4.4.0/kafka_2.13-4.4.0.jar'
        """
        group, artifact, version = self.coordinates.split(":")
        return f"{group.replace('.', '/')}/{artifact}/{version}/{self.file}"


Lock = dict[str, tuple[LockedJar, ...]]


def parse_lock(text: str, origin: str = LOCK_FILE) -> Lock:
    """The jar sets of a lock file's text; :class:`InfraError` naming what is malformed."""
    try:
        data = json.loads(text)
        return {name: tuple(LockedJar(str(j["coordinates"]), str(j["file"]), int(j["size"]),
                                      str(j["sha256"]).lower()) for j in jars)
                for name, jars in data["sets"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise InfraError(f"{origin}: not a jar lock file ({exc!r})") from exc


def load_lock() -> Lock:
    """The lock shipped with the package."""
    text = (resources.files("connectors.launch") / LOCK_FILE).read_text(encoding="utf-8")
    return parse_lock(text)


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, jar: LockedJar, origin: str) -> None:
    """Refuse ``path`` (:class:`InfraError`) unless its SHA-256 is the lock's."""
    actual = sha256_of(path)
    if actual != jar.sha256:
        raise InfraError(
            f"{jar.file} ({jar.coordinates}) from {origin}: SHA-256 {actual} does not match "
            f"the lock's {jar.sha256}; refused (the file is corrupt or not that artifact)")


@dataclass(frozen=True)
class Fetched:
    """A jar installed by this run and where it came from."""

    set: str
    jar: LockedJar
    origin: str


@dataclass
class SetupReport:
    """What :func:`setup_jars` did."""

    jars_dir: Path
    fetched: list[Fetched] = field(default_factory=list)
    present: int = 0
    #: files that were there with a wrong SHA-256 (fetched anew)
    replaced: list[str] = field(default_factory=list)
    #: jars not in the lock, removed from a set's folder
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Anything fetched, replaced or removed."""
        return bool(self.fetched or self.replaced or self.removed)


@dataclass(frozen=True)
class Sources:
    """Where missing jars come from: the local Maven repository first, then the
    repository URL (``https://`` or ``file://``)."""

    repository: str = MAVEN_CENTRAL
    local_repo: Path | None = None
    opener: Opener = _open_url
    timeout_s: float = 60.0


def missing_jars(jars_dir: Path, lock: Lock) -> list[str]:
    """``<set>/<file>`` of every locked jar absent from ``jars_dir`` or of the wrong size
    (a cheap check: no hashing)."""
    out = []
    for name, jars in lock.items():
        for jar in jars:
            path = jars_dir / name / jar.file
            if not path.is_file() or path.stat().st_size != jar.size:
                out.append(f"{name}/{jar.file}")
    return out


def _copy_local(jar: LockedJar, target: Path, local_repo: Path) -> str | None:
    """Copy the jar from the local Maven repository into ``target`` when it is there and
    verifies; the origin, or None."""
    source = local_repo / jar.repository_path
    if not source.is_file():
        return None
    part = target.with_name(target.name + ".part")
    shutil.copyfile(source, part)
    try:
        verify(part, jar, str(source))
    except InfraError as exc:
        part.unlink(missing_ok=True)
        log.warning("local Maven repository copy refused", error=str(exc))
        return None
    part.replace(target)
    return str(local_repo)


def _download(jar: LockedJar, target: Path, sources: Sources) -> str:
    """Download the jar into ``target`` (via ``.part``), verified; the origin."""
    url = f"{sources.repository.rstrip('/')}/{jar.repository_path}"
    part = target.with_name(target.name + ".part")
    try:
        with sources.opener(url, sources.timeout_s) as response, part.open("wb") as out:
            while chunk := response.read(_CHUNK):
                out.write(chunk)
    except (OSError, ValueError) as exc:
        part.unlink(missing_ok=True)
        raise InfraError(f"cannot download {jar.coordinates} from {url}: {exc} (`harvest "
                         "setup` needs network access to Maven Central, or --repository "
                         "pointing at a mirror)") from exc
    try:
        verify(part, jar, url)
    except InfraError:
        part.unlink(missing_ok=True)
        raise
    part.replace(target)
    return sources.repository


def _install(name: str, jar: LockedJar, folder: Path, sources: Sources,
             report: SetupReport) -> None:
    """One locked jar present and verified in ``folder``."""
    target = folder / jar.file
    if target.is_file():
        if target.stat().st_size == jar.size and sha256_of(target) == jar.sha256:
            report.present += 1
            return
        log.warning("jar fails its checksum; fetching it anew", path=str(target))
        report.replaced.append(f"{name}/{jar.file}")
        target.unlink()
    origin = None
    if sources.local_repo is not None:
        origin = _copy_local(jar, target, sources.local_repo)
    if origin is None:
        origin = _download(jar, target, sources)
    report.fetched.append(Fetched(name, jar, origin))


def setup_jars(jars_dir: Path, lock: Lock, sources: Sources,
               sets: tuple[str, ...] | None = None) -> SetupReport:
    """Every locked jar of ``sets`` (default: all) present in ``<jars_dir>/<set>/`` and
    matching its SHA-256; strays removed. Raises :class:`InfraError` for a download that
    fails or does not verify (what was installed before it stays)."""
    report = SetupReport(jars_dir)
    chosen = sets if sets is not None else tuple(lock)
    unknown = [s for s in chosen if s not in lock]
    if unknown:
        raise InfraError(f"jar set(s) {unknown} not in the lock (it has {sorted(lock)})")
    with locked(jars_dir / ".setup.lock"):  # one setup at a time across processes
        for name in chosen:
            folder = jars_dir / name
            folder.mkdir(parents=True, exist_ok=True)
            wanted = {jar.file for jar in lock[name]}
            for stray in sorted(folder.glob("*.jar")):
                if stray.name not in wanted:
                    stray.unlink()
                    report.removed.append(f"{name}/{stray.name}")
            for jar in lock[name]:
                _install(name, jar, folder, sources, report)
    return report
