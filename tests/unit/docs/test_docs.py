"""The docs against the code: what a newcomer reads must name what the code has.

* every flag (and every choice of a positional action, e.g. ``kafka up|down|status``) of
  every ``harvest`` subcommand, walked from the argparse parser, appears in its command's
  section of ``docs/cli.md``;
* every key of the job spec, walked from the pydantic :class:`Spec` model, appears in its
  section of ``docs/spec.md``; every ``HARVEST_*`` setting in ``docs/cli.md`` "Settings";
* no code comment or docstring names a document outside the repository, and every
  "ARCHITECTURE §N" a comment cites exists;
* the README's first screen is no CLI reference, and the result files it links exist.

A failure names what is missing, e.g. ``harvest produce --seed``, ``[job] trigger_ms``.
"""

from __future__ import annotations

import argparse
import re
import typing
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from pipeline.cli.main import build_parser
from pipeline.core.settings import Settings
from pipeline.spec.model import Spec

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
CODE_DIRS = ("pipeline", "connectors", "bench", "tests", "examples", "infra")
CODE_SUFFIXES = {".py", ".toml", ".properties", ".yml", ".yaml", ".template", ".sh", ".xml"}
#: references to documents that are not in the repository (built so that this file does
#: not match itself)
OUTSIDE_DOC = re.compile("|".join([
    "DES" + r"IGN(\.md| §)", "DEVEL" + "OPERS", r"\.\./" + "shared", r"\bshared" + "/",
    "digest" + " §",
]))
ARCH_REF = re.compile(r"ARCHITECTURE(?:\.md)? §(\d+)")


def sections(text: str) -> dict[str, str]:
    """``## heading`` → the text up to the next ``## `` heading."""
    out: dict[str, str] = {}
    title: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            if title is not None:
                out[title] = "\n".join(body)
            title, body = line[3:].strip(), []
        elif title is not None:
            body.append(line)
    if title is not None:
        out[title] = "\n".join(body)
    return out


# ---------------------------------------------------------------------- CLI


def cli_items(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
              ) -> Iterator[tuple[tuple[str, ...], str]]:
    """(subcommand path, flag or positional choice) for every argument, recursively."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if path:  # a nested subcommand: its name must be documented too
                    yield path, name
                yield from cli_items(sub, (*path, name))
        elif action.option_strings:
            longs = [o for o in action.option_strings if o.startswith("--")]
            yield path, (longs or action.option_strings)[0]
        elif action.choices is not None and path:
            for choice in action.choices:
                yield path, str(choice)


def cli_section(docs: dict[str, str], path: tuple[str, ...]) -> str | None:
    """The section of ``docs/cli.md`` for a command path (global options for ``()``)."""
    return docs.get("Global options") if not path else docs.get(f"harvest {path[0]}")


def test_every_cli_flag_is_in_docs_cli() -> None:
    docs = sections((DOCS / "cli.md").read_text())
    missing: list[str] = []
    for path, item in cli_items(build_parser()):
        where = "Global options" if not path else f"harvest {path[0]}"
        body = cli_section(docs, path)
        if body is None:
            missing.append(f"section '## {where}' (for `harvest {' '.join(path)}`)")
        elif not re.search(rf"(?<![\w-]){re.escape(item)}(?![\w-])", body):
            missing.append(f"`harvest {' '.join(path)} {item}` (section '## {where}')")
    assert not missing, "docs/cli.md does not document:\n  " + "\n  ".join(
        sorted(set(missing)))


def test_every_command_is_in_the_docs_cli_index() -> None:
    text = (DOCS / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [name for name in sub.choices if f"[`{name}`](#harvest-{name})" not in text]
    assert not missing, (f"docs/cli.md's command table does not link: {missing} "
                         "(add a row like | [`name`](#harvest-name) | what it does |)")


def test_every_harvest_setting_is_in_docs_cli() -> None:
    body = sections((DOCS / "cli.md").read_text()).get("Settings", "")
    prefix = str(Settings.model_config.get("env_prefix", ""))
    missing = [f"{prefix}{name.upper()}" for name in Settings.model_fields
               if f"`{prefix}{name.upper()}`" not in body]
    assert not missing, f"docs/cli.md section '## Settings' does not list: {missing}"


# ---------------------------------------------------------------------- spec


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The pydantic model inside ``annotation`` (``X | None``, ``dict[str, X]``, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) is typing.Literal:
        return None
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def spec_keys(model: type[BaseModel], prefix: tuple[str, ...] = ()
              ) -> Iterator[tuple[str, ...]]:
    """Every leaf key of ``model`` as a path of TOML keys (aliases where set)."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        sub = _model_in(field.annotation)
        if sub is None:
            yield (*prefix, key)
        else:
            yield from spec_keys(sub, (*prefix, key))


def test_every_spec_key_is_in_docs_spec() -> None:
    text = (DOCS / "spec.md").read_text()
    docs = sections(text)
    missing: list[str] = []
    for path in spec_keys(Spec):
        if len(path) == 1:
            if f"`{path[0]}`" not in text and not any(t.startswith(f"[{path[0]}")
                                                      for t in docs):
                missing.append(f"`{path[0]}`")
            continue
        body = next((b for t, b in docs.items()
                     if t == f"[{path[0]}]" or t.startswith(f"[{path[0]}.")), None)
        label = f"[{path[0]}] {'.'.join(path[1:])}"
        if body is None:
            missing.append(f"{label} (no section '## [{path[0]}]')")
        elif f"`{path[-1]}`" not in body and f"`{'.'.join(path[1:])}`" not in body:
            missing.append(label)
    assert not missing, "docs/spec.md does not document:\n  " + "\n  ".join(missing)


# ---------------------------------------------------------------------- references


def code_files() -> Iterator[Path]:
    for top in CODE_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in CODE_SUFFIXES and "__pycache__" not in path.parts:
                yield path


def test_no_comment_names_a_document_outside_the_repo() -> None:
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
            for p in code_files()
            for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
            if OUTSIDE_DOC.search(line)]
    assert not hits, ("these lines cite a document the repository does not contain; "
                      "cite docs/ARCHITECTURE.md §N instead:\n  " + "\n  ".join(hits))


def test_cited_architecture_sections_exist() -> None:
    arch = (DOCS / "ARCHITECTURE.md").read_text()
    have = set(re.findall(r"^## §(\d+) ", arch, flags=re.M))
    bad = [f"{p.relative_to(ROOT)}:{n}: §{m}"
           for p in code_files()
           for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
           for m in ARCH_REF.findall(line) if m not in have]
    assert not bad, "docs/ARCHITECTURE.md has no such section:\n  " + "\n  ".join(bad)
    # the import contract in pyproject.toml points at this anchor
    assert "docs/ARCHITECTURE.md#layers" in (ROOT / "pyproject.toml").read_text()
    assert '<a id="layers"></a>' in arch


# ---------------------------------------------------------------------- README


def test_readme_first_screen_is_no_cli_reference() -> None:
    head = (ROOT / "README.md").read_text().splitlines()[:60]
    bad = [line for line in head
           if re.match(r"#+ .*CLI reference", line)
           or (line.startswith("|") and re.search(r"(?<![\w-])--[a-z]", line))
           or line.startswith("**`harvest ")]
    assert not bad, f"README.md's first 60 lines hold CLI reference material: {bad}"


def test_docs_link_files_that_exist() -> None:
    texts = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    missing = [f"{t.relative_to(ROOT)}: {ref}"
               for t in texts
               for ref in re.findall(r"bench/results/[\w./-]+\.(?:json|png)", t.read_text())
               if not (ROOT / ref).exists()]
    assert not missing, f"linked result files do not exist: {missing}"
