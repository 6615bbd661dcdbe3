"""MkDocs hook: pages generated from the code, so they cannot drift from it, and a nav that lists every page.

- ``reference/cli.md``: the help of every command and subcommand of ``paimon-py`` and ``paimon-spark``, as
  their argparse parsers print it.
- ``reference/options.md``: every table option declared in ``paimon_core.options``, with its default.
- A page of ``docs/`` that ``mkdocs.yml``'s nav leaves out joins the nav section of its folder (top-level
  pages: the design notes), so a new page is never only reachable by search.
- The API pages render the docstrings' reST habits as Markdown would: a cross-reference role
  (``:class:`~x.Y```) shows as the code it names, and a paragraph ending ``::`` before a code block as ``:``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
# argparse wraps help to the terminal width; a fixed width keeps the page the same on every machine.
HELP_WIDTH = "100"


# Where a page missing from the nav goes, by its folder under docs/.
SECTION_OF_FOLDER = {
    "how-to": "How-to guides",
    "spark": "Spark",
    "reference": "Reference",
    "": "Design and format notes",
}


def _nav_pages(items: Any) -> Iterator[str]:
    for item in items if isinstance(items, list) else [items]:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                yield from _nav_pages(value)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    nav = config.nav or []
    listed = set(_nav_pages(nav))
    docs = Path(config.docs_dir)
    for page in sorted(docs.rglob("*.md")):
        path = page.relative_to(docs).as_posix()
        folder = path.rpartition("/")[0]
        if path in listed or folder.startswith("_hooks"):
            continue
        section = SECTION_OF_FOLDER.get(folder.split("/")[0], SECTION_OF_FOLDER[""])
        entries = next(item[section] for item in nav if isinstance(item, dict) and section in item)
        entries.append(path)  # titled by the page's first heading
    return config


# After Markdown: ":class:<code>~paimon_core.Table</code>" (role, then the code span it marks).
_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|exc|data|obj|const):<code>~?")
_LITERAL_MARK = re.compile(r"::</p>")


def on_page_content(html: str, **_: Any) -> str:
    """The docstrings' reST roles and literal-block marks, as the reader should see them."""
    return _LITERAL_MARK.sub(":</p>", _ROLE.sub("<code>", html))


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    files.append(File.generated(config, "reference/options.md", content=options_reference()))
    return files


def _spark_cli() -> ModuleType:
    """``paimon_spark/cli.py`` loaded from its file: it imports only the standard library at the top, so the
    docs need no pyspark (importing the ``paimon_spark`` package would start with pyspark)."""
    path = ROOT / "packages/spark/src/paimon_spark/cli.py"
    spec = importlib.util.spec_from_file_location("_paimon_spark_cli_for_docs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """(name, parser, one-line help) of each subcommand, aliases left out."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield name, sub, helps.get(name, "")


def _help(parser: argparse.ArgumentParser) -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        return parser.format_help().rstrip()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def _command_section(parser: argparse.ArgumentParser, intro: str) -> list[str]:
    lines = [f"## {parser.prog}", "", intro, "", "```text", _help(parser), "```", ""]
    for name, sub, summary in _subcommands(parser):
        lines += [f"### {parser.prog} {name}", "", f"{summary[:1].upper()}{summary[1:]}.", ""]
        lines += ["```text", _help(sub), "```", ""]
    return lines


def cli_reference() -> str:
    from paimon_core import cli

    lines = [
        "# Command line",
        "",
        "Generated from the argument parsers when the site is built: what is below is what `--help` prints.",
        "",
    ]
    lines += _command_section(
        cli.build_parser(),
        "Installed with `paimon-core`: inspect, read, compact and maintain tables locally.",
    )
    lines += _command_section(
        _spark_cli().build_parser(),
        "Installed with `paimon-spark`: Paimon's actions run on Spark (also as a `spark-submit` main file).",
    )
    return "\n".join(lines)


_SIZE_UNITS = (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10), ("b", 1))
_DURATION_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000), ("ms", 1))


def _with_unit(value: int, units: tuple[tuple[str, int], ...]) -> str:
    name, size = next((n, s) for n, s in units if value % s == 0)
    return f"{value // size} {name}"


def _default(option: Any) -> str:
    from paimon_core import options

    value = option.default
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int) and value > 0 and option.parse is options.parse_memory_size:
        text = _with_unit(value, _SIZE_UNITS)
    elif isinstance(value, int) and value > 0 and option.parse is options.parse_duration_ms:
        text = _with_unit(value, _DURATION_UNITS)
    else:
        text = str(value)
    return f"`{text}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def options_reference() -> str:
    from paimon_core import options

    lines = [
        "# Table options",
        "",
        "Generated from the declarations in `paimon_core.options` when the site is built. Keys and defaults",
        "are Java Paimon's, and values are strings as Paimon writes them (`'128 mb'`, `'10 s'`, `'true'`).",
        "An unknown key is refused with the close matches; *immutable* options can only be set when the",
        "table is created. Where no default is shown, the option is unset unless the description says how",
        "it is derived.",
        "",
        "| option | default | description |",
        "| --- | --- | --- |",
    ]
    for option in sorted(options.all_options(), key=lambda o: o.key):
        notes = []
        if option.fallback_keys:
            notes.append("Also read as " + ", ".join(f"`{k}`" for k in option.fallback_keys) + ".")
        if option.immutable:
            notes.append("Immutable.")
        description = " ".join([option.doc, *notes])
        lines.append(f"| `{option.key}` | {_default(option)} | {_cell(description)} |")
    lines += [
        "",
        "## Catalog options",
        "",
        "Options of `Catalog.load` and `Catalog.open` that are no table options (docs/catalogs.md); keys",
        "under `jdbc.` are the jdbc catalog's connection properties.",
        "",
        "| option | default | description |",
        "| --- | --- | --- |",
    ]
    for option in options.catalog_options():
        lines.append(f"| `{option.key}` | {_default(option)} | {_cell(option.doc)} |")
    return "\n".join(lines) + "\n"
