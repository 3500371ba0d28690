"""Write connectors/launch/jars.lock.json from infra/maven/pom.xml (`make jars-lock`).

Run after changing a version in the pom: Maven resolves each profile (``kafka``,
``spark``) into the local repository, and the lock records every resolved jar's Maven
coordinates, file name, size and SHA-256. `harvest setup` fetches exactly these files
(from Maven Central, no Maven needed) and refuses any whose SHA-256 differs.

    python infra/maven/write_lock.py            # needs mvn and network access once
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "infra" / "maven" / "pom.xml"
LOCK = ROOT / "connectors" / "launch" / "jars.lock.json"
PROFILES = ("kafka", "spark")


def resolved(profile: str) -> list[tuple[str, Path]]:
    """``(group:artifact:version, jar in the local repository)`` of one profile."""
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "deps.txt"
        subprocess.run(["mvn", "-q", "-B", "-f", str(POM), f"-P{profile}",
                        "dependency:list", "-DincludeScope=runtime",
                        "-DoutputAbsoluteArtifactFilename=true",
                        f"-DoutputFile={listing}"], check=True)
        lines = listing.read_text().splitlines()
    out = []
    for line in lines:
        text = line.strip().split(" -- ")[0]
        parts = text.split(":")
        if len(parts) < 6 or parts[2] != "jar":
            continue
        group, artifact, _, version = parts[:4]
        out.append((f"{group}:{artifact}:{version}", Path(":".join(parts[5:]))))
    return sorted(out, key=lambda item: item[1].name)


def entry(coordinates: str, jar: Path) -> dict[str, object]:
    data = jar.read_bytes()
    return {"coordinates": coordinates, "file": jar.name, "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest()}


def render(lock: dict[str, object]) -> str:
    """The lock as JSON with one jar per line (readable diffs)."""
    sets = lock["sets"]
    assert isinstance(sets, dict)
    blocks = []
    for profile, jars in sets.items():
        rows = ",\n".join("    " + json.dumps(j) for j in jars)
        blocks.append(f"  {json.dumps(profile)}: [\n{rows}\n  ]")
    head = {k: v for k, v in lock.items() if k != "sets"}
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    return "{\n" + "\n".join(lines) + '\n "sets": {\n' + ",\n".join(blocks) + "\n }\n}\n"


def main() -> int:
    sets = {profile: [entry(c, j) for c, j in resolved(profile)] for profile in PROFILES}
    lock = {
        "about": "the jars `harvest setup` fetches; written by infra/maven/write_lock.py "
                 "from infra/maven/pom.xml",
        "repository": "https://repo1.maven.org/maven2",
        "sets": sets,
    }
    LOCK.write_text(render(lock))
    print(f"{LOCK}: " + ", ".join(f"{len(v)} {k} jars" for k, v in sets.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
