"""``paimon-py purge-files``: Paimon's ``purge_files`` procedure on the command line
(docs/how-to/maintenance.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paimon_core.table import Table

__all__ = ["PURGE_COMMANDS", "add_purge_commands", "run_purge_command"]

PURGE_COMMANDS = ("purge-files",)


def add_purge_commands(table_command: Callable[[str, str], Any]) -> None:
    """Add the command; ``table_command(name, help)`` makes a subcommand that names one table."""
    table_command("purge-files", "delete all data of a table: branches, tags, consumers, files, snapshots")


def run_purge_command(args: argparse.Namespace, table: Table) -> None:
    """Run ``purge-files`` on ``table`` and print what it removed."""
    from paimon_core import maintenance

    result = maintenance.purge_files(table)
    print(
        f"purged: {len(result.branches)} branch(es), {len(result.tags)} tag(s), "
        f"{len(result.consumers)} consumer(s), {result.expired_snapshots} snapshot(s) expired, "
        f"{result.deleted_files} unused file(s) deleted"
    )
