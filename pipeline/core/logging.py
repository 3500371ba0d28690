"""structlog set-up: console rendering on a terminal, JSON lines otherwise."""

from __future__ import annotations

import logging
import sys

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}


def _stderr_logger(*_args: object) -> structlog.PrintLogger:
    """A PrintLogger on the current ``sys.stderr``."""
    return structlog.PrintLogger(file=sys.stderr)


def configure_logging(fmt: str = "auto", level: str = "info") -> None:
    """Configure structlog once per process; logs go to stderr so stdout stays data."""
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        # Resolve sys.stderr per logger, not once: pytest swaps it per test and closes
        # the old one, and in-process CLI tests call this function.
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    """A named logger; call :func:`configure_logging` first in entry points."""
    return structlog.get_logger(name)
