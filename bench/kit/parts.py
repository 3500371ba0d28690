"""``--only``: the parts of a benchmark a run names."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.core.errors import ConfigError


def only_parts(only: str | None, parts: Iterable[str], *, also: Iterable[str] = (),
               expected: str | None = None) -> list[str]:
    """The comma-separated parts ``only`` names (all of ``parts`` when empty); besides
    ``parts``, the names in ``also`` are accepted. ConfigError naming an unknown one
    (``expected``: what the message lists, by default ``parts``)."""
    known = list(parts)
    chosen = known if not only else [x.strip() for x in only.split(",") if x.strip()]
    unknown = sorted(set(chosen) - set(known) - set(also))
    if unknown:
        raise ConfigError(f"--only: unknown part(s) {unknown}; expected "
                          f"{expected if expected is not None else known}")
    return chosen
