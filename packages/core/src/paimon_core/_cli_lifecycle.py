"""``paimon-py expire-partitions``, ``expire-tags``, ``replace-tag`` and ``mark-partition-done``: Paimon's
table lifecycle procedures on the command line, with their argument names (docs/how-to/maintenance.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paimon_core.table import Table

__all__ = ["LIFECYCLE_COMMANDS", "add_lifecycle_commands", "run_lifecycle_command"]

LIFECYCLE_COMMANDS = ("expire-partitions", "expire-tags", "replace-tag", "mark-partition-done")


def add_lifecycle_commands(table_command: Callable[[str, str], Any]) -> None:
    """Add the commands; ``table_command(name, help)`` makes a subcommand that names one table."""
    expire = table_command("expire-partitions", "drop the partitions older than an expiration time")
    expire.add_argument("--expiration-time", default=None, help="e.g. '7 d' (default: the table option)")
    expire.add_argument("--timestamp-formatter", default=None, help="e.g. 'yyyyMMdd'")
    expire.add_argument("--timestamp-pattern", default=None, help="e.g. '$dt $hour:00:00'")
    expire.add_argument("--expire-strategy", default=None, choices=("values-time", "update-time"))
    expire.add_argument("--max-expires", type=int, default=None, help="partitions expired at most")
    tags = table_command("expire-tags", "delete tags past their time-to-live, or created before a time")
    tags.add_argument("--older-than", default=None, help="'yyyy-MM-dd HH:mm:ss' (local time)")
    replace = table_command("replace-tag", "point an existing tag at another snapshot")
    replace.add_argument("tag")
    replace.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: latest)")
    replace.add_argument("--time-retained", default=None, help="the tag's new time-to-live, e.g. '7 d'")
    done = table_command("mark-partition-done", "mark partitions done (partition.mark-done-action)")
    done.add_argument("partitions", help="'dt=20240101,hh=00;dt=20240102,hh=00'")


def run_lifecycle_command(args: argparse.Namespace, table: Table) -> None:
    """Run one of :data:`LIFECYCLE_COMMANDS` on ``table`` and print what it did."""
    from paimon_core import maintenance

    if args.command == "expire-partitions":
        expired = maintenance.expire_partitions(
            table,
            expiration_time=args.expiration_time,
            timestamp_formatter=args.timestamp_formatter,
            timestamp_pattern=args.timestamp_pattern,
            expire_strategy=args.expire_strategy,
            max_expires=args.max_expires,
        )
        for spec in expired:
            print(", ".join(f"{k}={v}" for k, v in spec.items()))
        print(f"expired {len(expired)} partition(s)")
    elif args.command == "expire-tags":
        names = maintenance.expire_tags(table, older_than=args.older_than)
        print(f"expired {len(names)} tag(s)" + (f": {', '.join(names)}" if names else ""))
    elif args.command == "replace-tag":
        tag = maintenance.replace_tag(table, args.tag, args.snapshot, args.time_retained)
        print(f"tag {tag.name!r} -> snapshot {tag.snapshot.id}")
    else:
        count = maintenance.mark_partition_done(table, args.partitions)
        print(f"marked {count} partition(s) done")
