"""`harvest kafka|registry up|down|status`: the subcommand of a local service that the
command starts, stops and inspects (the broker, :mod:`pipeline.cli.kafka_cmd`; the schema
registry, :mod:`pipeline.cli.registry_cmd`).

``up`` and ``status`` print the service's status line; ``status`` exits 0 when it runs
and answers, :data:`EXIT_NOT_RUNNING` when it is stopped, 1 when it runs but does not
answer; ``down`` stops it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Protocol, TypeVar

from pipeline.cli.args import positive_float

EXIT_NOT_RUNNING = 3


class ServiceStatus(Protocol):
    """What a local service's ``up`` and ``status`` report."""

    @property
    def running(self) -> bool: ...

    @property
    def answering(self) -> bool: ...

    def describe(self) -> str: ...


StatusT = TypeVar("StatusT", bound=ServiceStatus, covariant=True)


class LocalService(Protocol[StatusT]):
    """A local service: started, stopped and inspected by the launcher in connectors.launch."""

    def up(self, timeout: float | None = None) -> StatusT: ...

    def down(self) -> bool: ...

    def status(self, probe_timeout: float = 3.0) -> StatusT: ...


S = TypeVar("S", bound=ServiceStatus)


def add_service_parser(subparsers: argparse._SubParsersAction, name: str, what: str,
                       timeout_s: float, help: str, description: str,
                       extra_actions: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """The ``name`` subcommand with its ``action`` (up | down | status, and
    ``extra_actions``) and ``--timeout`` (seconds ``up`` waits for ``what`` to answer)."""
    p = subparsers.add_parser(name, help=help, description=description)
    p.add_argument("action", choices=["up", "down", "status", *extra_actions],
                   help="what to do")
    p.add_argument("--timeout", type=positive_float, default=timeout_s,
                   help=f"seconds `up` waits for {what} to answer (default {timeout_s:g})")
    return p


def run_action(action: str, service: LocalService[S], name: str, timeout: float,
               check: Callable[[S], None]) -> int:
    """Do ``action`` (up | down | status) on ``service``, print one line on stdout, and
    return the exit code; ``check`` sees the status of a service that runs (a setting
    that points the other commands elsewhere)."""
    if action == "up":
        status = service.up(timeout=timeout)
        print(status.describe())
        check(status)
        return 0
    if action == "down":
        print(f"{name}: stopped" if service.down() else f"{name}: was not running")
        return 0
    status = service.status()
    print(status.describe())
    if not status.running:
        return EXIT_NOT_RUNNING
    check(status)
    return 0 if status.answering else 1
