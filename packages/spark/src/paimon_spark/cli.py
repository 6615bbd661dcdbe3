"""The ``paimon-spark`` actions: ``compact`` and ``compact_database`` as Paimon's Spark/Flink actions.

Run with plain Python (``local[*]`` unless ``--master`` says otherwise)::

    paimon-spark compact --warehouse /wh --database db --table t --partition dt=1,hh=2 --mode streaming
    python -m paimon_spark.cli compact_database --warehouse s3://b/wh --including_tables 'db\\.events_.*'

or on a cluster, this file being the main file (``--master`` then comes from ``spark-submit``)::

    spark-submit --master spark://host:7077 .../paimon_spark/cli.py compact --warehouse ... --table t

Options use Paimon's names; both ``--catalog_conf`` and ``--catalog-conf`` spellings are accepted. Progress
shows on a terminal; a summary (files and bytes before and after, time) is printed at the end. A streaming
job runs until interrupted (Ctrl-C) and still prints its summary.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any


def _flag(parser: argparse.ArgumentParser, name: str, **kwargs: Any) -> None:
    """``--name`` with Paimon's underscore spelling and the dashed one."""
    spellings = [f"--{name}"]
    if "_" in name:
        spellings.append(f"--{name.replace('_', '-')}")
    parser.add_argument(*spellings, dest=name, **kwargs)


def _conf(pairs: Sequence[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"paimon-spark: error: expected key=value, got {pair!r}")
        conf[key.strip()] = value.strip()
    return conf


def _common(parser: argparse.ArgumentParser) -> None:
    _flag(parser, "warehouse", required=True, help="the warehouse URI (/data/wh, s3://bucket/wh)")
    _flag(parser, "catalog_conf", action="append", default=[], metavar="K=V", help="catalog option")
    _flag(parser, "master", default=None, help="Spark master (default: spark-submit's, else local[*])")
    _flag(parser, "parallelism", type=int, default=None, help="Spark partitions per compaction round")
    _flag(parser, "poll_interval", type=float, default=None, help="streaming: seconds between polls")
    _flag(parser, "no_progress", action="store_true", help="no progress display")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paimon-spark", description="Paimon maintenance actions on Spark.")
    actions = parser.add_subparsers(dest="action", required=True)
    table = actions.add_parser("compact", help="compact a table (batch: once; streaming: until stopped)")
    _common(table)
    _flag(table, "database", default=None, help="the database (or give --table db.t)")
    _flag(table, "table", required=True)
    _flag(
        table,
        "partition",
        action="append",
        default=[],
        metavar="K=V[,K2=V2]",
        help="only this partition (repeatable: any of them); ',' = AND",
    )
    _flag(table, "where", default=None, help="partition predicate in Spark SQL (instead of --partition)")
    _flag(table, "mode", choices=["batch", "streaming"], default="batch")
    _flag(table, "order_strategy", choices=["order", "zorder", "none"], default=None)
    _flag(table, "order_by", default=None, help="sort columns, e.g. a,b")
    _flag(table, "table_conf", action="append", default=[], metavar="K=V", help="dynamic table option")
    database = actions.add_parser(
        "compact_database", aliases=["compact-database"], help="compact many tables"
    )
    _common(database)
    _flag(database, "including_databases", default=None, help="regex of databases (default all)")
    _flag(database, "including_tables", default=None, help="regex of db.table names (default all)")
    _flag(database, "excluding_tables", default=None, help="regex of db.table names to leave out")
    _flag(database, "mode", choices=["divided", "combined"], default="divided")
    _flag(database, "streaming", action="store_true", help="keep compacting until interrupted")
    return parser


def _session(master: str | None, action: str) -> Any:
    # Executors must run this interpreter (it has pyarrow and paimon); spark-submit users set their own.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(f"paimon-spark {action}")
    if master:  # otherwise spark-submit's master, or local[*] (Spark's default) under plain python
        builder = builder.master(master)
    builder = builder.config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())
    return builder.getOrCreate()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import paimon_spark
    from paimon_core.errors import PaimonError

    spark = _session(args.master, args.action)
    spark.sparkContext.setLogLevel("WARN")
    progress = False if args.no_progress else None
    try:
        if args.action == "compact":
            summary = paimon_spark.compact(
                spark,
                warehouse=args.warehouse,
                database=args.database,
                table=args.table,
                partitions=";".join(args.partition) or None,
                where=args.where,
                mode=args.mode,
                order_strategy=args.order_strategy,
                order_by=args.order_by or (),
                options=_conf(args.table_conf),
                catalog_conf=_conf(args.catalog_conf),
                parallelism=args.parallelism,
                progress=progress,
                poll_interval=args.poll_interval,
            )
            print(summary)
        else:
            summaries = paimon_spark.compact_database(
                spark,
                warehouse=args.warehouse,
                including_databases=args.including_databases,
                including_tables=args.including_tables,
                excluding_tables=args.excluding_tables,
                mode=args.mode,
                streaming=args.streaming,
                catalog_conf=_conf(args.catalog_conf),
                parallelism=args.parallelism,
                progress=progress,
                poll_interval=args.poll_interval if args.poll_interval is not None else 10.0,
            )
            for name in sorted(summaries):
                print(summaries[name])
            if not summaries:
                print("no table matched")
    except PaimonError as exc:
        print(f"paimon-spark: error: {exc}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
