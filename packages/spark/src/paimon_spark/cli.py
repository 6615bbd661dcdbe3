"""The ``paimon-spark`` actions: ``compact``, ``compact_database`` and ``merge_into`` as Paimon's actions.

Run with plain Python (``local[*]`` unless ``--master`` says otherwise)::

    paimon-spark compact --warehouse /wh --database db --table t --partition dt=1,hh=2 --mode streaming
    python -m paimon_spark.cli compact_database --warehouse s3://b/wh --including_tables 'db\\.events_.*'

or on a cluster, this file being the main file (``--master`` then comes from ``spark-submit``)::

    spark-submit --master spark://host:7077 .../paimon_spark/cli.py compact --warehouse ... --table t

or as a Spark Connect client (``--remote``, or ``$SPARK_REMOTE``; needs ``paimon-spark[connect]``)::

    paimon-spark compact --remote sc://spark-connect:15002 --warehouse s3://b/wh --table db.t
    paimon-spark merge_into --warehouse /wh --table db.t --target_as T --source_table S \\
        --source_sql "CREATE TEMPORARY VIEW S AS SELECT * FROM parquet.`/data/changes`" \\
        --on "T.id = S.id" --merge_actions matched-upsert,not-matched-insert \\
        --matched_upsert_set "v = S.v" --not_matched_insert_values "*"

Options use Paimon's names; both ``--catalog_conf`` and ``--catalog-conf`` spellings are accepted. Progress
shows on a terminal; a summary (files and bytes before and after, time) is printed at the end. A streaming
job runs until interrupted (Ctrl-C) and still prints its summary.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paimon_core.redaction import Redactor


def _flag(parser: argparse.ArgumentParser, name: str, **kwargs: Any) -> None:
    """``--name`` with Paimon's underscore spelling and the dashed one."""
    spellings = [f"--{name}"]
    if "_" in name:
        spellings.append(f"--{name.replace('_', '-')}")
    parser.add_argument(*spellings, dest=name, **kwargs)


def _redactor(args: argparse.Namespace) -> Redactor:
    """Masks the credentials among the ``key=value`` options given on the command line."""
    from paimon_core.redaction import Redactor

    pairs = [*(getattr(args, "catalog_conf", None) or []), *(getattr(args, "table_conf", None) or [])]
    return Redactor.of({k.strip(): v for k, sep, v in (p.partition("=") for p in pairs) if sep})


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
    _flag(parser, "remote", default=None, help="Spark Connect server sc://host:port (default: $SPARK_REMOTE)")
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
    merge = actions.add_parser("merge_into", aliases=["merge-into"], help="merge a source into a table")
    _common(merge)
    _flag(merge, "database", default=None, help="the database (or give --table db.t)")
    _flag(merge, "table", required=True)
    _flag(merge, "target_as", default=None, help="the target's alias in conditions (default: its name)")
    _flag(
        merge,
        "source_table",
        required=True,
        help="a table or view of the session, e.g. one --source_sql made",
    )
    _flag(merge, "source_sql", action="append", default=[], help="SQL run first (repeatable)")
    _flag(merge, "on", required=True, help="the merge condition, e.g. T.id = S.id")
    _flag(merge, "merge_actions", required=True, help="comma-separated: " + ",".join(MERGE_ACTIONS))
    for name in MERGE_ARGUMENTS:
        _flag(merge, name, default=None)
    _flag(merge, "table_conf", action="append", default=[], metavar="K=V", help="dynamic table option")
    return parser


MERGE_ACTIONS = (
    "matched-upsert",
    "matched-delete",
    "not-matched-insert",
    "not-matched-by-source-upsert",
    "not-matched-by-source-delete",
)
# The action's flags and merge_into's keyword for each, by action.
MERGE_ARGUMENTS = {
    "matched_upsert_condition": ("matched-upsert", "matched_upsert_condition"),
    "matched_upsert_set": ("matched-upsert", "matched_upsert_setting"),
    "matched_delete_condition": ("matched-delete", "matched_delete_condition"),
    "not_matched_insert_condition": ("not-matched-insert", "not_matched_insert_condition"),
    "not_matched_insert_values": ("not-matched-insert", "not_matched_insert_values"),
    "not_matched_by_source_upsert_condition": (
        "not-matched-by-source-upsert",
        "not_matched_by_source_upsert_condition",
    ),
    "not_matched_by_source_upsert_set": (
        "not-matched-by-source-upsert",
        "not_matched_by_source_upsert_setting",
    ),
    "not_matched_by_source_delete_condition": (
        "not-matched-by-source-delete",
        "not_matched_by_source_delete_condition",
    ),
}

MERGE_REQUIRED = {
    "matched-upsert": "matched_upsert_set",
    "not-matched-by-source-upsert": "not_matched_by_source_upsert_set",
    "not-matched-insert": "not_matched_insert_values",
}


def merge_arguments(args: argparse.Namespace) -> dict[str, str]:
    """merge_into's action keywords from the action's flags; only the actions named in --merge_actions."""
    chosen = [a.strip() for a in args.merge_actions.split(",") if a.strip()]
    unknown = [a for a in chosen if a not in MERGE_ACTIONS]
    if unknown or not chosen:
        raise SystemExit(
            f"paimon-spark: error: --merge_actions takes {','.join(MERGE_ACTIONS)}, got {unknown}"
        )
    keywords: dict[str, str] = {}
    for flag, (action, keyword) in MERGE_ARGUMENTS.items():
        value = getattr(args, flag)
        if action in chosen and value is not None:
            keywords[keyword] = value
    for action in chosen:
        needed = MERGE_REQUIRED.get(action)
        if needed is not None and getattr(args, needed) is None:
            raise SystemExit(f"paimon-spark: error: {action} needs --{needed}")
        if action.endswith("-delete"):  # with no condition it deletes every such row
            keywords.setdefault(action.replace("-", "_") + "_condition", "TRUE")
    return keywords


def _session(master: str | None, remote: str | None, action: str) -> Any:
    from pyspark.sql import SparkSession

    from paimon_core.progress import shows_progress

    remote = remote or os.environ.get("SPARK_REMOTE")
    if remote:  # a Spark Connect client: the server has its master, its Python and its console
        return SparkSession.builder.remote(remote).getOrCreate()
    # Executors must run this interpreter (it has pyarrow and paimon); spark-submit users set their own.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(f"paimon-spark {action}")
    if master:  # otherwise spark-submit's master, or local[*] (Spark's default) under plain python
        builder = builder.master(master)
    # Spark's own bar only where Paimon's would show: a person's terminal, not a pipe or CI.
    builder = builder.config("spark.ui.showConsoleProgress", str(shows_progress(sys.stderr)).lower())
    return builder.getOrCreate()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import paimon_spark
    from paimon_core.errors import PaimonError, error_line
    from paimon_spark._tasks import is_connect

    spark = _session(args.master, args.remote, args.action)
    if not is_connect(spark):  # a Spark Connect client has no SparkContext; the server logs as it is set to
        spark.sparkContext.setLogLevel("WARN")
    progress = False if args.no_progress else None
    try:
        if args.action == "compact":
            summary: Any = paimon_spark.compact(
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
        elif args.action in ("merge_into", "merge-into"):
            identifier = f"{args.database}.{args.table}" if args.database else args.table
            summary = paimon_spark.merge_into(
                spark,
                warehouse=args.warehouse,
                target_table=identifier,
                target_alias=args.target_as,
                source_table=args.source_table,
                source_sqls=args.source_sql,
                merge_condition=args.on,
                options=_conf(args.table_conf),
                catalog_conf=_conf(args.catalog_conf),
                **merge_arguments(args),
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
        # The options given (--catalog_conf s3.secret-key=...) never show, whichever error repeats them.
        print(f"paimon-spark: error: {_redactor(args)(error_line(exc))}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
