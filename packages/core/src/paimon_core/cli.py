"""The ``paimon-py`` command line.

Not ``paimon``: pypaimon installs a console script of that name, and both may live in one environment.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv

from paimon_core._cli_branch import add_branch_commands, run_branch_command
from paimon_core._cli_lifecycle import LIFECYCLE_COMMANDS, add_lifecycle_commands, run_lifecycle_command
from paimon_core._cli_manifest import MANIFEST_COMMANDS, add_manifest_commands, run_manifest_command
from paimon_core._cli_purge import PURGE_COMMANDS, add_purge_commands, run_purge_command
from paimon_core._cli_write import add_write_command, write_files
from paimon_core._open_table import open_table
from paimon_core._version import __version__
from paimon_core.catalog import check_option_key
from paimon_core.errors import ConfigError, PaimonError, error_line
from paimon_core.options import known_option
from paimon_core.progress import Progress, human_size
from paimon_core.redaction import Redactor, redact, redacted_options
from paimon_core.table import SystemTable, Table, split_system_name


def table_info(table: Table, max_snapshots: int = 20) -> dict[str, Any]:
    """Everything ``paimon-py info`` shows, as plain data."""
    snapshots = table.snapshots()
    entries = table.live_entries() if snapshots else []
    sizes = [e.file.file_size for e in entries]
    partitions = {e.partition for e in entries}
    return {
        "path": redact(table.path),
        "schema_id": table.schema.id,
        "fields": [{"id": f.id, "name": f.name, "type": f.type.to_json()} for f in table.schema.fields],
        "partition_keys": list(table.schema.partition_keys),
        "options": redacted_options(table.schema.options),
        "snapshot_count": len(snapshots),
        "snapshots": [
            {
                "id": s.id,
                "kind": s.commit_kind.value,
                "time": dt.datetime.fromtimestamp(s.time_millis / 1000).isoformat(timespec="seconds"),
                "commit_user": s.commit_user,
                "total_records": s.total_record_count,
                "delta_records": s.delta_record_count,
            }
            for s in snapshots[-max_snapshots:]
        ],
        "files": {
            "count": len(entries),
            "total_bytes": sum(sizes),
            "min_bytes": min(sizes, default=0),
            "max_bytes": max(sizes, default=0),
            "rows": sum(e.file.row_count for e in entries),
            "partitions": len(partitions),
        },
    }


def _print_info(info: dict[str, Any]) -> None:
    print(f"Table     {info['path']}")
    print(f"Schema    id {info['schema_id']}")
    for field in info["fields"]:
        print(f"  {field['id']:>3}  {field['name']}: {json.dumps(field['type'])}")
    if info["partition_keys"]:
        print(f"Partition keys  {', '.join(info['partition_keys'])}")
    print("Options")
    for key, value in sorted(info["options"].items()):
        print(f"  {key} = {value}")
    files = info["files"]
    print(
        f"Files     {files['count']} files, {human_size(files['total_bytes'])}, {files['rows']} rows, "
        f"{files['partitions']} partitions (smallest {human_size(files['min_bytes'])}, "
        f"largest {human_size(files['max_bytes'])})"
    )
    print(f"Snapshots {info['snapshot_count']}" + (" (latest shown last)" if info["snapshots"] else ""))
    for s in info["snapshots"]:
        print(
            f"  {s['id']:>6}  {s['kind']:<9} {s['time']}  total {s['total_records']:>10}  "
            f"delta {s['delta_records']:>+10}  {s['commit_user']}"
        )


def _instant(text: str) -> int | str:
    """A ``--timestamp`` argument: epoch millis when all digits, else 'yyyy-MM-dd HH:mm:ss' as given."""
    return int(text) if text.isdigit() else text


def _conf(pairs: Sequence[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise PaimonError(f"expected key=value, got {pair!r}")
        conf[key.strip()] = value.strip()
    return conf


def _given_options(args: argparse.Namespace) -> dict[str, str]:
    """The well-formed ``key=value`` pairs of a command's ``--option`` and ``--catalog-conf`` flags."""
    pairs = [*(getattr(args, "option", None) or []), *(getattr(args, "catalog_conf", None) or [])]
    return {key.strip(): value.strip() for key, sep, value in (p.partition("=") for p in pairs) if sep}


def _known_table_options(options: Mapping[str, str]) -> dict[str, str]:
    """The pairs of ``options`` that are Paimon table options (dynamic options of the table)."""
    return {k: v for k, v in options.items() if known_option(k) is not None or k.startswith("fields.")}


def _option_parent() -> argparse.ArgumentParser:
    """``--option K=V`` (repeatable), which every command takes."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--option",
        "--catalog-conf",
        "--catalog_conf",
        dest="option",
        action="append",
        default=[],
        metavar="K=V",
        help="storage or catalog option (repeatable), e.g. s3.endpoint=http://host:9000, scan.tag-name=t",
    )
    return parent


OPTION_PARENT = _option_parent()
PROGRESS_PARENT = argparse.ArgumentParser(add_help=False)
PROGRESS_PARENT.add_argument("--no-progress", action="store_true", help="no progress bar")


def _progress(args: argparse.Namespace) -> bool | None:
    """A command's ``progress`` argument: off with ``--no-progress``, else None (a bar when a person
    watches: :func:`paimon_core.progress.shows_progress`)."""
    return False if args.no_progress else None


TABLE_LOCATION_HELP = "the table directory (/data/warehouse/db.db/t), or with --table the warehouse URI"


def _add_location_arguments(command: argparse.ArgumentParser, location_help: str) -> None:
    command.add_argument("location", nargs="?", default=None, help=location_help)
    command.add_argument(
        "--warehouse", default=None, help="the warehouse URI, as Paimon's actions take it (or give it first)"
    )


def _add_table_arguments(command: argparse.ArgumentParser) -> None:
    """A table either way every command takes it: its directory, or ``[--warehouse] WH --database D
    --table T`` (or ``--table D.T``) as Paimon's actions take it."""
    _add_location_arguments(command, TABLE_LOCATION_HELP)
    command.add_argument("--database", default=None, help="the table's database (or give --table db.t)")
    command.add_argument("--table", default=None, help="the table, in --database or as db.t")


def _add_job_arguments(command: argparse.ArgumentParser, location_help: str) -> None:
    _add_location_arguments(command, location_help)
    command.add_argument(
        "--parallelism", type=int, default=None, help="local worker processes (default: CPUs)"
    )
    command.add_argument("--threads", action="store_true", help="run tasks on threads instead of processes")
    command.add_argument("--poll-interval", type=float, default=None, help="streaming: seconds between polls")


def _add_compact_commands(commands: Any) -> None:
    compact = commands.add_parser(
        "compact",
        help="compact a table (batch: once; streaming: until stopped)",
        parents=[OPTION_PARENT, PROGRESS_PARENT],
    )
    _add_job_arguments(compact, TABLE_LOCATION_HELP)
    compact.add_argument("--database", default=None, help="the table's database (or give --table db.t)")
    compact.add_argument("--table", default=None, help="the table, in --database or as db.t")
    compact.add_argument(
        "--table-conf",
        "--table_conf",
        action="append",
        default=[],
        metavar="K=V",
        help="dynamic table option",
    )
    compact.add_argument(
        "--partition",
        action="append",
        default=[],
        metavar="K=V[,K2=V2]",
        help="only this partition (repeatable: any of them); ',' = AND, ';' = OR",
    )
    compact.add_argument("--mode", choices=["batch", "streaming"], default="batch")
    compact.add_argument("--order-strategy", "--order_strategy", choices=["order", "zorder"], default=None)
    compact.add_argument("--order-by", "--order_by", default=None, help="sort columns, e.g. a,b")
    database = commands.add_parser(
        "compact-database",
        help="compact the tables of databases chosen by regex",
        parents=[OPTION_PARENT, PROGRESS_PARENT],
    )
    _add_job_arguments(database, "the warehouse URI, e.g. /data/warehouse or s3://bucket/wh")
    database.add_argument(
        "--including-databases",
        "--including_databases",
        default=None,
        help="regex of databases (default all)",
    )
    database.add_argument(
        "--including-tables", "--including_tables", default=None, help="regex of db.table names (default all)"
    )
    database.add_argument(
        "--excluding-tables", "--excluding_tables", default=None, help="regex of db.table names to skip"
    )
    database.add_argument("--mode", choices=["divided", "combined"], default="divided")
    database.add_argument("--streaming", action="store_true", help="keep compacting until interrupted")


def _warehouse(args: argparse.Namespace) -> str:
    """The warehouse of a job command: ``--warehouse`` (Paimon's actions) or the first argument."""
    if args.warehouse is not None and args.location is not None and args.warehouse != args.location:
        raise ConfigError(
            f"two warehouses given: --warehouse {args.warehouse!r} and {args.location!r}; give one",
            "warehouse",
        )
    warehouse = args.warehouse if args.warehouse is not None else args.location
    if warehouse is None:
        raise ConfigError("no warehouse given: pass it first or as --warehouse", "warehouse")
    return str(warehouse)


def _target(args: argparse.Namespace, dynamic: Mapping[str, str] | None = None) -> Table:
    """The table a command works on: its directory (the first argument), or ``[--warehouse] WH --database D
    --table T`` (or ``--table D.T``) as Paimon's actions take it. ``--option`` pairs are taken as
    ``Catalog.open`` takes its options: every pair goes to the storage backend (``s3.endpoint``,
    credentials...), and Paimon's table options are also dynamic options of the table (``scan.tag-name``...).

    Raises:
        ConfigError: an option key that is neither (naming the close matches), or no table given.
    """
    from paimon_core.catalog import Catalog

    dynamic = dict(dynamic or {})
    if args.table is None and args.database is None and args.warehouse is None and args.location is not None:
        options = _conf(args.option)
        for key in [*options, *dynamic]:
            check_option_key(key)
        return open_table(args.location, options, **{**_known_table_options(options), **dynamic})
    if args.table is None:
        raise ConfigError(
            "which table? give the table directory, or --table (with --database, or as db.t) and the warehouse",
            "table",
        )
    database, table = args.database, args.table
    if database is None:
        database, dot, table = args.table.partition(".")
        if not dot:
            raise ConfigError(f"--table {args.table!r} needs --database, or give it as db.t", "database")
    catalog = Catalog.open(_warehouse(args), **_conf(args.option))
    return catalog.get_table(f"{database}.{table}", **dynamic)


def _run_compact(args: argparse.Namespace) -> None:
    from paimon_core.compact import compact_table

    table = _target(args, _conf(args.table_conf))
    summary = compact_table(
        table,
        partitions=";".join(args.partition) or None,
        mode=args.mode,
        order_strategy=args.order_strategy,
        order_by=args.order_by or (),
        parallelism=args.parallelism,
        processes=not args.threads,
        progress=_progress(args),
        poll_interval=args.poll_interval,
    )
    print(summary)


def _run_compact_database(args: argparse.Namespace) -> None:
    from paimon_core.catalog import Catalog
    from paimon_core.compact import compact_database

    catalog = Catalog.open(_warehouse(args), **_conf(args.option))
    summaries = compact_database(
        catalog,
        including_databases=args.including_databases,
        including_tables=args.including_tables,
        excluding_tables=args.excluding_tables,
        mode=args.mode,
        streaming=args.streaming,
        parallelism=args.parallelism,
        processes=not args.threads,
        progress=_progress(args),
        poll_interval=args.poll_interval if args.poll_interval is not None else 10.0,
    )
    for summary in summaries.values():
        print(summary)
    if not summaries:
        print("no table matched")


def _add_maintenance_commands(commands: Any) -> None:
    def table_command(name: str, help_text: str, progress: bool = False) -> Any:
        parents = [OPTION_PARENT, PROGRESS_PARENT] if progress else [OPTION_PARENT]
        command = commands.add_parser(name, help=help_text, parents=parents)
        _add_table_arguments(command)
        return command

    create = table_command("create-tag", "tag a snapshot (the latest by default)")
    create.add_argument("tag")
    create.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: latest)")
    create.add_argument("--time-retained", default=None, help="tag time-to-live, e.g. '7 d'")
    from_time = table_command(
        "create-tag-from-timestamp", "tag the first snapshot committed at or after a time"
    )
    from_time.add_argument("tag")
    from_time.add_argument("timestamp", help="'yyyy-MM-dd HH:mm:ss' (local time) or epoch millis")
    from_time.add_argument("--time-retained", default=None, help="tag time-to-live, e.g. '7 d'")
    rename = table_command("rename-tag", "give a tag another name (same snapshot and time-to-live)")
    rename.add_argument("tag")
    rename.add_argument("target_tag")
    delete = table_command("delete-tag", "delete tags")
    delete.add_argument("tag", help="a tag name or a comma-separated list")
    rollback = table_command("rollback", "roll the table back to a snapshot or a tag")
    target = rollback.add_mutually_exclusive_group(required=True)
    target.add_argument("--snapshot", type=int, default=None)
    target.add_argument("--tag", default=None)
    target.add_argument(
        "--timestamp",
        default=None,
        help="the newest snapshot at or before 'yyyy-MM-dd HH:mm:ss' or epoch millis",
    )
    expire = table_command(
        "expire-snapshots", "expire old snapshots and delete the files only they use", progress=True
    )
    expire.add_argument("--retain-max", type=int, default=None)
    expire.add_argument("--retain-min", type=int, default=None)
    expire.add_argument(
        "--older-than", default=None, help="'yyyy-MM-dd HH:mm:ss': expire snapshots before it"
    )
    expire.add_argument("--max-deletes", type=int, default=None, help="snapshots expired per run at most")
    orphans = table_command("remove-orphan-files", "delete files no snapshot or tag uses", progress=True)
    orphans.add_argument("--older-than", default=None, help="only files older than this (default: 1 day ago)")
    orphans.add_argument("--dry-run", action="store_true", help="list the files, delete nothing")
    consumer = table_command("reset-consumer", "move a consumer to a snapshot, or delete it")
    consumer.add_argument("consumer_id")
    consumer.add_argument("--next-snapshot", type=int, default=None, help="omit to delete the consumer")
    clear = table_command("clear-consumers", "delete consumers by id (regular expressions, whole ids)")
    clear.add_argument("--including", default=None, help="ids to delete (default: all)")
    clear.add_argument("--excluding", default=None, help="ids to keep among them")
    add_lifecycle_commands(table_command)
    add_manifest_commands(table_command)
    add_purge_commands(table_command)
    add_branch_commands(commands, table_command)


def _run_maintenance(args: argparse.Namespace) -> bool:
    """Run a maintenance command; False when ``args.command`` is not one."""
    from paimon_core import maintenance

    command = args.command
    if command in LIFECYCLE_COMMANDS:
        run_lifecycle_command(args, _target(args))
        return True
    if command in MANIFEST_COMMANDS:
        run_manifest_command(args, _target(args))
        return True
    if command in PURGE_COMMANDS:
        run_purge_command(args, _target(args))
        return True
    if command not in ("create-tag", "create-tag-from-timestamp", "rename-tag", "delete-tag", "rollback",
                       "expire-snapshots", "remove-orphan-files", "reset-consumer", "clear-consumers"):  # fmt: skip
        return False
    table = _target(args)
    if command == "create-tag":
        tag = maintenance.create_tag(table, args.tag, args.snapshot, args.time_retained)
        print(f"tag {tag.name!r} -> snapshot {tag.snapshot.id}")
    elif command == "create-tag-from-timestamp":
        tag = maintenance.create_tag_from_timestamp(
            table, args.tag, _instant(args.timestamp), args.time_retained
        )
        print(f"tag {tag.name!r} -> snapshot {tag.snapshot.id}")
    elif command == "rename-tag":
        tag = maintenance.rename_tag(table, args.tag, args.target_tag)
        print(f"tag {args.tag!r} renamed to {tag.name!r} (snapshot {tag.snapshot.id})")
    elif command == "delete-tag":
        maintenance.delete_tag(table, args.tag)
        print(f"deleted tag(s) {args.tag}")
    elif command == "rollback":
        if args.timestamp is not None:
            maintenance.rollback_to_timestamp(table, _instant(args.timestamp))
        else:
            maintenance.rollback_to(table, snapshot_id=args.snapshot, tag=args.tag)
        latest = table.latest_snapshot()
        print(f"rolled back; latest snapshot is {latest.id if latest else None}")
    elif command == "expire-snapshots":
        expired = maintenance.expire_snapshots(
            table,
            retain_max=args.retain_max,
            retain_min=args.retain_min,
            older_than=args.older_than,
            max_deletes=args.max_deletes,
            progress=_progress(args),
        )
        print(f"expired {expired} snapshot(s)")
    elif command == "remove-orphan-files":
        result = maintenance.remove_orphan_files(
            table,
            older_than=args.older_than,
            dry_run=args.dry_run,
            progress=_progress(args),
        )
        for path in result.deleted:
            print(path)
        verb = "would delete" if args.dry_run else "deleted"
        print(f"{verb} {len(result.deleted)} orphan file(s), {human_size(result.deleted_bytes)}")
    elif command == "clear-consumers":
        cleared = maintenance.clear_consumers(table, args.including, args.excluding)
        print(f"cleared {len(cleared)} consumer(s)" + (f": {', '.join(sorted(cleared))}" if cleared else ""))
    else:
        table.consumer_manager.reset_to(args.consumer_id, args.next_snapshot)
        print(f"consumer {args.consumer_id!r} " + ("deleted" if args.next_snapshot is None else "reset"))
    return True


def _add_read_command(commands: Any) -> None:
    read = commands.add_parser(
        "read", help="print rows of a table or a system table (JSON lines or CSV)", parents=[OPTION_PARENT]
    )
    _add_table_arguments(read)
    travel = read.add_mutually_exclusive_group()
    travel.add_argument("--snapshot", type=int, default=None, help="time travel to this snapshot")
    travel.add_argument("--tag", default=None, help="time travel to this tag")
    travel.add_argument(
        "--timestamp", default=None, help="time travel to 'yyyy-MM-dd HH:mm:ss' or epoch millis"
    )
    read.add_argument("--columns", default=None, help="comma-separated columns (default: all)")
    read.add_argument("--limit", type=int, default=None, help="print at most this many rows")
    read.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")


def _run_read(args: argparse.Namespace) -> None:
    """Read through the same planner as every other entry point (options, time travel, system tables)."""
    system = None
    if args.location is not None and args.table is None:
        args.location, system = split_system_name(args.location)
    elif args.table is not None:
        args.table, system = split_system_name(args.table)
    table = _target(args)
    columns = args.columns.split(",") if args.columns else None
    if system:
        if args.snapshot is not None or args.tag is not None or args.timestamp is not None:
            table = table.copy(
                {k: v for k, v in (("scan.snapshot-id", args.snapshot), ("scan.tag-name", args.tag),
                                   ("scan.timestamp", args.timestamp)) if v is not None}
            )  # fmt: skip
        data = SystemTable(table, system).to_arrow(columns)
    else:
        timestamp = None if args.timestamp is None else _instant(args.timestamp)
        data = table.to_arrow(columns, snapshot_id=args.snapshot, tag=args.tag, timestamp=timestamp)
    if args.limit is not None:
        data = data.slice(0, args.limit)
    if args.format == "csv":
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(data, sink)
        sys.stdout.write(sink.getvalue().to_pybytes().decode("utf-8"))
        return
    for row in data.to_pylist():
        print(json.dumps(row, default=str, ensure_ascii=False))


def _run_write(args: argparse.Namespace) -> None:
    if args.table is not None and args.warehouse is not None and args.location is not None:
        args.files, args.location = [args.location, *args.files], None  # the warehouse given: all are files
    if not args.files:
        raise ConfigError("no files to write: give them after the table", "files")
    table = _target(args)
    display = Progress(_progress(args))
    created = write_files(
        table, args.files, file_format=args.format, overwrite=args.overwrite, progress=display
    )
    print(f"snapshot {created}" if created is not None else "nothing written")


PROG = "paimon-py"


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: ``main`` parses with it, and the docs' CLI reference is generated from it."""
    parser = argparse.ArgumentParser(prog=PROG, description="Inspect and maintain Apache Paimon tables.")
    parser.add_argument("--version", action="version", version=f"{PROG} (paimon-core {__version__})")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser(
        "info", help="schema, options, snapshots, file count and sizes of a table", parents=[OPTION_PARENT]
    )
    _add_table_arguments(info)
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.add_argument("--snapshots", type=int, default=20, help="how many recent snapshots to list")
    _add_read_command(commands)
    _add_compact_commands(commands)
    _add_maintenance_commands(commands)
    add_write_command(commands, [OPTION_PARENT, PROGRESS_PARENT], _add_table_arguments)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = sys.argv[1:] if argv is None else list(argv)
    unknown = _unknown_command(arguments, _command_names(parser))
    if unknown is not None:
        print(f"{PROG}: error: {unknown}", file=sys.stderr)
        return 2
    args = parser.parse_args(arguments)
    try:
        if _run_maintenance(args) or run_branch_command(args, lambda: _target(args)):
            pass
        elif args.command == "read":
            _run_read(args)
        elif args.command == "compact":
            _run_compact(args)
        elif args.command == "write":
            _run_write(args)
        elif args.command == "compact-database":
            _run_compact_database(args)
        elif args.command == "info":
            details = table_info(_target(args), args.snapshots)
            if args.json:
                print(json.dumps(details, indent=2))
            else:
                _print_info(details)
    except PaimonError as exc:
        # The options given (--option s3.secret-key=...) never show, whichever error repeats them.
        redact_given = Redactor.of(_given_options(args))
        print(f"{PROG}: error: {redact_given(error_line(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return _SIGINT_EXIT
    except BrokenPipeError:
        # The reader went away (``paimon-py read ... | head``): stop quietly, and keep Python's final flush of
        # stdout from failing again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _SIGPIPE_EXIT
    return 0


_SIGPIPE_EXIT = 128 + 13  # what a shell reports for a command killed by SIGPIPE
_SIGINT_EXIT = 128 + 2  # ... and by Ctrl-C


def _command_names(parser: argparse.ArgumentParser) -> list[str]:
    return [name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices]


def _unknown_command(arguments: Sequence[str], commands: Sequence[str]) -> str | None:
    """The error for a first argument that is no command, with the nearest one; None when it is fine."""
    first = next((a for a in arguments if not a.startswith("-")), None)
    if first is None or first in commands:
        return None
    close = difflib.get_close_matches(first, commands, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f" (commands: {', '.join(commands)})"
    return f"unknown command {first!r}{hint}"


if __name__ == "__main__":
    sys.exit(main())
