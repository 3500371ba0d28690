"""`harvest setup`: fetch the Kafka broker jars and the Spark connector jars.

Puts every jar of the package's lock file (:mod:`connectors.launch.jar_fetch`) into
``HARVEST_CACHE_DIR/jars/{kafka,spark}``, from the local Maven repository when Maven
has it, else from Maven Central over HTTPS (``--repository``: a mirror, ``file://``
too), each checked against the lock's SHA-256. Prints what it fetched and where; a no-op
when everything is there. Needs no Maven; the broker and the job need Java 17+, which
it checks and names when missing. ``--check`` fetches nothing and exits 2 when a jar is
missing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from connectors.launch.jar_fetch import (
    MAVEN_CENTRAL,
    SetupReport,
    Sources,
    load_lock,
    missing_jars,
    setup_jars,
)
from connectors.launch.jars import FIX_JARS, check_java, find_java
from pipeline.core.errors import InfraError, SetupRequiredError
from pipeline.core.settings import Settings

#: where Maven keeps what it downloaded (a copy from there needs no network)
MAVEN_LOCAL = Path.home() / ".m2" / "repository"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `setup` subcommand."""
    p = subparsers.add_parser(
        "setup",
        help="fetch the Kafka broker and Spark connector jars (SHA-256 checked)",
        description="Fetch the jars the local Kafka broker and the Spark job need into "
        "HARVEST_CACHE_DIR/jars, from Maven Central (no Maven needed), each checked against "
        "the SHA-256 of the package's lock file. A no-op when all are there.",
    )
    p.add_argument("--repository", default=MAVEN_CENTRAL, metavar="URL",
                   help=f"Maven repository to download from (default {MAVEN_CENTRAL}; "
                   "file:///path for a local mirror in the Maven layout)")
    p.add_argument("--maven-local", type=Path, default=MAVEN_LOCAL, metavar="DIR",
                   help="copy jars from this local Maven repository when it has them "
                   "(default ~/.m2/repository)")
    p.add_argument("--no-maven-local", action="store_true",
                   help="never copy from the local Maven repository")
    p.add_argument("--only", choices=["kafka", "spark"], default=None,
                   help="only the broker jars (kafka) or the connector jars (spark)")
    p.add_argument("--check", action="store_true",
                   help="fetch nothing: exit 0 when every jar is there, else 2 naming them")
    p.set_defaults(handler=run)


def _java_line(settings: Settings) -> str:
    """``java: PATH (Java N)``, or a warning naming what to install."""
    try:
        java = find_java(settings.java_home)
        return f"java: {java} (Java {check_java(java)})"
    except InfraError as exc:
        return f"warning: {exc}; `harvest kafka up` and `harvest submit` need it"


def _print_report(report: SetupReport, sources: Sources, total: int) -> None:
    """What was fetched, from where, into where; or that nothing was to do."""
    where = report.jars_dir
    if not report.changed:
        print(f"harvest setup: all {total} jars present and verified in {where}; nothing "
              "to do")
        return
    for name in report.removed:
        print(f"  removed {name} (not in the lock)")
    for name in report.replaced:
        print(f"  {name} failed its SHA-256 check: fetched anew")
    for item in report.fetched:
        print(f"  fetched {item.set}/{item.jar.file}  {item.jar.coordinates}  "
              f"({item.jar.size / 1e6:.1f} MB from {item.origin})")
    size = sum(item.jar.size for item in report.fetched)
    print(f"harvest setup: fetched {len(report.fetched)} jars ({size / 1e6:.1f} MB) into "
          f"{where}, SHA-256 verified; {report.present} were already there")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Fetch (or ``--check``) the jars; prints a line per jar fetched and a summary."""
    lock = load_lock()
    if args.only is not None:
        lock = {args.only: lock[args.only]}
    total = sum(len(jars) for jars in lock.values())
    if args.check:
        missing = missing_jars(settings.jars_dir, lock)
        if missing:
            raise SetupRequiredError(f"{len(missing)} of {total} jars missing in "
                                     f"{settings.jars_dir} ({', '.join(missing[:5])}"
                                     f"{', ...' if len(missing) > 5 else ''}); {FIX_JARS}")
        print(f"harvest setup: all {total} jars present in {settings.jars_dir}")
        return 0
    local = None if args.no_maven_local or not args.maven_local.is_dir() else args.maven_local
    sources = Sources(repository=args.repository, local_repo=local)
    report = setup_jars(settings.jars_dir, lock, sources)
    _print_report(report, sources, total)
    print(_java_line(settings))
    return 0
