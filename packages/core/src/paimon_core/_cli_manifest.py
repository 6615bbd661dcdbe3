"""``paimon-py compact-manifest``: Paimon's ``compact_manifest`` procedure on the command line
(docs/how-to/maintenance.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paimon_core.table import Table

__all__ = ["MANIFEST_COMMANDS", "add_manifest_commands", "run_manifest_command"]

MANIFEST_COMMANDS = ("compact-manifest",)


def add_manifest_commands(table_command: Callable[[str, str], Any]) -> None:
    """Add the command; ``table_command(name, help)`` makes a subcommand that names one table."""
    compact = table_command("compact-manifest", "merge the latest snapshot's manifests (a COMPACT snapshot)")
    compact.add_argument("--dry-run", action="store_true", help="log the manifests, commit nothing")


def run_manifest_command(args: argparse.Namespace, table: Table) -> None:
    """Run ``compact-manifest`` on ``table`` and print what it did."""
    from paimon_core import maintenance

    created = maintenance.compact_manifest(table, dry_run=args.dry_run)
    if created is not None:
        print(f"manifests merged in snapshot {created}")
    else:
        print("dry run: nothing committed" if args.dry_run else "manifests merged already: nothing committed")
