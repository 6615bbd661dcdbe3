"""``paimon-py create-branch``, ``delete-branch``, ``fast-forward`` and ``list-branches``: Paimon's branch
procedures (:mod:`paimon_core.maintenance`) from the command line, with the table arguments every table
command takes."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paimon_core.table import Table

__all__ = ["BRANCH_COMMANDS", "add_branch_commands", "run_branch_command"]

BRANCH_COMMANDS = ("create-branch", "delete-branch", "fast-forward", "list-branches")


def add_branch_commands(commands: Any, table_command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    create = table_command("create-branch", "create a branch, from a tag or empty with the current schema")
    create.add_argument("branch")
    create.add_argument(
        "--tag", default=None, help="the tag the branch starts from (default: an empty branch)"
    )
    create.add_argument("--ignore-if-exists", action="store_true", help="no error when the branch exists")
    delete = table_command(
        "delete-branch", "delete branches (their metadata; data files are left to orphan removal)"
    )
    delete.add_argument("branch", help="a branch name or a comma-separated list")
    forward = table_command(
        "fast-forward", "make the table's history the branch's from its first snapshot on"
    )
    forward.add_argument("branch")
    table_command("list-branches", "list the table's branches")


def run_branch_command(args: argparse.Namespace, table: Callable[[], Table]) -> bool:
    """Run a branch command on ``table()``; False when ``args.command`` is not one."""
    from paimon_core import maintenance

    if args.command not in BRANCH_COMMANDS:
        return False
    target = table()
    if args.command == "create-branch":
        maintenance.create_branch(target, args.branch, args.tag, ignore_if_exists=args.ignore_if_exists)
        print(f"branch {args.branch!r} created" + (f" from tag {args.tag!r}" if args.tag else ""))
    elif args.command == "delete-branch":
        deleted = maintenance.delete_branch(target, args.branch)
        print(f"deleted branch(es) {', '.join(deleted)}")
    elif args.command == "fast-forward":
        latest = maintenance.fast_forward(target, args.branch)
        print(f"fast-forwarded to branch {args.branch!r}; latest snapshot is {latest.id}")
    else:
        for name in maintenance.list_branches(target):
            print(name)
    return True
