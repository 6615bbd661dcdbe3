"""The ``paimon`` command line."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from typing import Any

from paimon_core.errors import PaimonError
from paimon_core.table import Table, open_table


def _human_size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def table_info(table: Table, max_snapshots: int = 20) -> dict[str, Any]:
    """Everything ``paimon info`` shows, as plain data."""
    snapshots = table.snapshots()
    entries = table.live_entries() if snapshots else []
    sizes = [e.file.file_size for e in entries]
    partitions = {e.partition for e in entries}
    return {
        "path": table.path,
        "schema_id": table.schema.id,
        "fields": [{"id": f.id, "name": f.name, "type": f.type.to_json()} for f in table.schema.fields],
        "partition_keys": list(table.schema.partition_keys),
        "options": dict(table.schema.options),
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
        f"Files     {files['count']} files, {_human_size(files['total_bytes'])}, {files['rows']} rows, "
        f"{files['partitions']} partitions (smallest {_human_size(files['min_bytes'])}, "
        f"largest {_human_size(files['max_bytes'])})"
    )
    print(f"Snapshots {info['snapshot_count']}" + (" (latest shown last)" if info["snapshots"] else ""))
    for s in info["snapshots"]:
        print(
            f"  {s['id']:>6}  {s['kind']:<9} {s['time']}  total {s['total_records']:>10}  "
            f"delta {s['delta_records']:>+10}  {s['commit_user']}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paimon", description="Inspect and maintain Apache Paimon tables.")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="schema, options, snapshots, file count and sizes of a table")
    info.add_argument(
        "table_uri", help="the table directory, e.g. /warehouse/db.db/t or s3://bucket/wh/db.db/t"
    )
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.add_argument("--snapshots", type=int, default=20, help="how many recent snapshots to list")
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            details = table_info(open_table(args.table_uri), args.snapshots)
            if args.json:
                print(json.dumps(details, indent=2))
            else:
                _print_info(details)
    except PaimonError as exc:
        print(f"paimon: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
