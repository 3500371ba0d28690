"""Where harvest's data files are: a checkout's folders, else the wheel's package data.

A checkout has ``schemas/``, ``examples/`` and ``infra/`` at its root; a wheel carries
the same folders as package data under ``pipeline/data/`` (pyproject's
``force-include``), found with :mod:`importlib.resources`. :class:`Settings` takes its
defaults from here (``HARVEST_SCHEMAS_DIR``, ``HARVEST_EXAMPLES_DIR``,
``HARVEST_INFRA_DIR`` still override), and its cache: the checkout's ``.cache``, else
the user's cache folder (``$XDG_CACHE_HOME/harvest``, by default ``~/.cache/harvest``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pipeline.core.errors import InfraError

#: the folder of the package data inside the ``pipeline`` package of a wheel
PACKAGE_DATA = "data"
#: the data folders a wheel carries (each also at a checkout's root)
DATA_FOLDERS = ("schemas", "examples", "infra")


def is_checkout(root: Path) -> bool:
    """True when ``root`` is a harvest source checkout (its ``pyproject.toml`` and
    ``schemas/`` beside the packages), not the site-packages of an installed wheel."""
    return (root / "pyproject.toml").is_file() and (root / "schemas").is_dir()


def packaged(name: str) -> Path:
    """The wheel's copy of the data folder ``name`` (one of :data:`DATA_FOLDERS`);
    :class:`InfraError` when the installed package lacks it."""
    if name not in DATA_FOLDERS:
        raise InfraError(f"data folder: {name!r} is not one of {', '.join(DATA_FOLDERS)}")
    path = Path(str(resources.files("pipeline") / PACKAGE_DATA / name))
    if not path.is_dir():
        raise InfraError(f"the installed harvest package has no {PACKAGE_DATA}/{name} "
                         f"(looked in {path}); reinstall it from a wheel built with "
                         "`pip wheel --no-deps <checkout>`")
    return path


def data_dir(name: str, root: Path) -> Path:
    """The data folder ``name``: ``<root>/<name>`` in a checkout, else the packaged copy.

    >>> from pipeline.core.settings import PROJECT_ROOT
    >>> data_dir("schemas", PROJECT_ROOT) == PROJECT_ROOT / "schemas"
    True
    """
    return root / name if is_checkout(root) else packaged(name)


def user_cache(environ: dict[str, str], home: Path) -> Path:
    """The user's cache folder for harvest: ``$XDG_CACHE_HOME/harvest``, else
    ``<home>/.cache/harvest``.

    >>> user_cache({}, Path("/home/ada"))
    PosixPath('/home/ada/.cache/harvest')
    >>> user_cache({"XDG_CACHE_HOME": "/var/cache/ada"}, Path("/home/ada"))
    PosixPath('/var/cache/ada/harvest')
    """
    base = environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else home / ".cache") / "harvest"


def cache_dir(root: Path, environ: dict[str, str], home: Path) -> Path:
    """The default cache: ``<root>/.cache`` in a checkout (``make`` keeps its layout),
    else :func:`user_cache`."""
    return root / ".cache" if is_checkout(root) else user_cache(environ, home)
