"""``CALL [catalog.]sys.<procedure>(...)``: Paimon's Spark procedures, with their names, argument names and
order, and result columns; Paimon's Flink names (``rollback_to``, ``snapshot_id``, ``consumer_id``...) are
accepted too. Arguments are positional or named (``table => 'db.t'``), values literals or constant
expressions Spark evaluates (``cast(10 as bigint)``).

The procedures run on the driver: compaction spreads its tasks over the executors
(:func:`paimon_spark.compact`), the maintenance procedures work on table metadata.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from paimon_core import options as opts
from paimon_core.maintenance import (
    clear_consumers,
    create_branch,
    create_tag,
    create_tag_from_timestamp,
    delete_branch,
    delete_tag,
    expire_snapshots,
    fast_forward,
    remove_orphan_files,
    rename_tag,
    rollback_to,
    rollback_to_timestamp,
)
from paimon_spark._commands import merge_into
from paimon_spark._procedures import compact, compact_database
from paimon_spark._sql._call_compact_manifest import COMPACT_MANIFEST
from paimon_spark._sql._call_lifecycle import LIFECYCLE_PROCEDURES
from paimon_spark._sql._call_purge import PURGE_FILES
from paimon_spark._sql._call_spec import Call, Param, Procedure
from paimon_spark._sql._call_unsupported import UNSUPPORTED_PROCEDURES
from paimon_spark._sql._context import Context
from paimon_spark._sql._errors import ProcedureNotFoundError, ProcedureUnsupportedError
from paimon_spark._sql._query import evaluate
from paimon_spark._sql._views import refresh_views

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["PROCEDURES", "call"]


def _compact(call: Call) -> list[tuple[Any, ...]]:
    call.refuse("partition_idle_time", "buckets")
    strategy = call.text("compact_strategy")
    if strategy is not None and strategy.lower() != "full":
        raise call.ctx.error(f"compact_strategy {strategy!r}: only 'full' is supported")
    name = call.name_of(call.args["table"])
    compact(
        call.ctx.spark,
        warehouse=call.catalog.warehouse,
        table=name.identifier,
        partitions=call.text("partitions"),
        where=call.text("where"),
        order_strategy=call.text("order_strategy"),
        order_by=call.text("order_by") or (),
        options=call.text("options"),
        catalog_conf=call.catalog.options,
        progress=False,
    )
    return [(True,)]


def _compact_database(call: Call) -> list[tuple[Any, ...]]:
    call.refuse("partition_idle_time", "compact_strategy")
    if call.text("options"):
        raise call.ctx.error("options of compact_database are not supported: set them on the tables")
    summaries = compact_database(
        call.ctx.spark,
        warehouse=call.catalog.warehouse,
        including_databases=call.text("including_databases"),
        including_tables=call.text("including_tables"),
        excluding_tables=call.text("excluding_tables"),
        mode=call.text("mode") or "divided",
        catalog_conf=call.catalog.options,
        progress=False,
    )
    return [(str(s),) for s in summaries.values()] or [("no table compacted",)]


def _create_tag(call: Call) -> list[tuple[Any, ...]]:
    create_tag(call.table(), call.args["tag"], call.get("snapshot"), call.text("time_retained"))
    return [(True,)]


def _create_tag_from_timestamp(call: Call) -> list[tuple[Any, ...]]:
    tag = create_tag_from_timestamp(
        call.table(), call.args["tag"], call.args["timestamp"], call.text("time_retained")
    )
    watermark = tag.snapshot.watermark
    return [
        (tag.name, tag.snapshot.id, tag.snapshot.time_millis, None if watermark is None else str(watermark))
    ]


def _rename_tag(call: Call) -> list[tuple[Any, ...]]:
    rename_tag(call.table(), call.args["tag"], call.args["target_tag"])
    return [(True,)]


def _rollback_to_timestamp(call: Call) -> list[tuple[Any, ...]]:
    table = call.table()
    previous = table.snapshot_manager.latest_id()
    target = rollback_to_timestamp(table, call.args["timestamp"])
    return [(previous, target.id)]


def _delete_tag(call: Call) -> list[tuple[Any, ...]]:
    delete_tag(call.table(), call.args["tag"])
    return [(True,)]


def _create_branch(call: Call) -> list[tuple[Any, ...]]:
    ignore = bool(call.get("ignoreIfExists"))
    create_branch(call.table(), call.args["branch"], call.text("tag"), ignore_if_exists=ignore)
    return [(True,)]


def _delete_branch(call: Call) -> list[tuple[Any, ...]]:
    delete_branch(call.table(), call.args["branch"])
    return [(True,)]


def _fast_forward(call: Call) -> list[tuple[Any, ...]]:
    fast_forward(call.table(), call.args["branch"])
    return [(True,)]


def _rollback(call: Call) -> list[tuple[Any, ...]]:
    table = call.table()
    snapshot, tag = call.get("snapshot"), call.text("tag")
    version = call.text("version")
    if version is not None:  # a snapshot id, else a tag (tag names are never numbers)
        snapshot, tag = (int(version), None) if version.isdigit() else (None, version)
    if (snapshot is None) == (tag is None):
        raise call.ctx.error("rollback needs one of version, snapshot and tag")
    previous = table.snapshot_manager.latest_id()
    rollback_to(table, snapshot_id=snapshot, tag=tag)
    return [(previous, table.snapshot_manager.latest_id())]


def _expire_snapshots(call: Call) -> list[tuple[Any, ...]]:
    expired = expire_snapshots(
        call.table(),
        retain_max=call.get("retain_max"),
        retain_min=call.get("retain_min"),
        older_than=call.text("older_than"),
        max_deletes=call.get("max_deletes"),
    )
    return [(expired,)]


def _remove_orphan_files(call: Call) -> list[tuple[Any, ...]]:
    mode = call.text("mode")
    if mode is not None and mode.lower() not in ("local", "distributed"):
        raise call.ctx.error(f"mode {mode!r}: expected 'local' or 'distributed'")
    target = call.name_of(call.args["table"])
    catalog = call.catalog.open()
    tables = (
        [f"{target.database}.{t}" for t in catalog.list_tables(target.database)]
        if target.table == "*"
        else [target.identifier]
    )
    count = size = 0
    for identifier in tables:
        result = remove_orphan_files(
            catalog.get_table(identifier),
            older_than=call.text("older_than"),
            dry_run=bool(call.get("dry_run")),
        )
        count, size = count + len(result.deleted), size + result.deleted_bytes
    return [(count, size)]


def _reset_consumer(call: Call) -> list[tuple[Any, ...]]:
    table = call.table()
    table.consumer_manager.reset_to(call.args["consumerId"], call.get("nextSnapshotId"))
    return [(True,)]


def _clear_consumers(call: Call) -> list[tuple[Any, ...]]:
    clear_consumers(call.table(), call.text("includingConsumers"), call.text("excludingConsumers"))
    return [(True,)]


_MERGE_PARAMS = (
    "target_alias",
    "source_sqls",
    "source_table",
    "merge_condition",
    "matched_upsert_condition",
    "matched_upsert_setting",
    "not_matched_insert_condition",
    "not_matched_insert_values",
    "matched_delete_condition",
    "not_matched_by_source_upsert_condition",
    "not_matched_by_source_upsert_setting",
    "not_matched_by_source_delete_condition",
)


def _merge_into(call: Call) -> list[tuple[Any, ...]]:
    name = call.name_of(call.args["target_table"])
    summary = merge_into(
        call.ctx.spark,
        warehouse=call.catalog.warehouse,
        target_table=name.identifier,
        catalog_conf=call.catalog.options,
        **{k: call.text(k) for k in _MERGE_PARAMS if call.text(k) is not None},  # type: ignore[arg-type]
    )
    return [(summary.snapshot_id, summary.updated, summary.deleted, summary.inserted)]


_TABLE = Param("table", required=True)
_OPTIONS = Param("options", aliases=("table_options",))
_ROLLBACK_RESULT = "previous_snapshot_id bigint, current_snapshot_id bigint"
_COMPACT_PARAMS = (
    _TABLE,
    Param("partitions"),
    Param("compact_strategy"),
    Param("order_strategy"),
    Param("order_by"),
    Param("where"),
    _OPTIONS,
    Param("partition_idle_time"),
    Param("buckets"),
)

PROCEDURES: dict[str, Procedure] = {
    p.name: p
    for p in (
        Procedure("compact", _COMPACT_PARAMS, "result boolean", _compact),
        Procedure(
            "compact_database",
            (Param("including_databases"), Param("including_tables"), Param("excluding_tables"), _OPTIONS),
            "result string",
            _compact_database,
            named_only=(Param("mode"), Param("partition_idle_time"), Param("compact_strategy")),
        ),
        Procedure(
            "create_tag",
            (
                _TABLE,
                Param("tag", required=True),
                Param("snapshot", int, aliases=("snapshot_id",)),
                Param("time_retained"),
            ),
            "result boolean",
            _create_tag,
        ),
        Procedure(
            "create_tag_from_timestamp",
            (
                _TABLE,
                Param("tag", required=True),
                Param("timestamp", int, required=True),
                Param("time_retained"),
            ),
            "tagName string, snapshot bigint, commit_time bigint, watermark string",
            _create_tag_from_timestamp,
        ),
        Procedure(
            "rename_tag",
            (_TABLE, Param("tag", required=True), Param("target_tag", required=True)),
            "result boolean",
            _rename_tag,
        ),
        Procedure("delete_tag", (_TABLE, Param("tag", required=True)), "result boolean", _delete_tag),
        Procedure(
            "create_branch",
            (
                _TABLE,
                Param("branch", required=True),
                Param("tag"),
                Param("ignoreIfExists", bool, aliases=("ignore_if_exists",)),
            ),
            "result boolean",
            _create_branch,
        ),
        Procedure(
            "delete_branch", (_TABLE, Param("branch", required=True)), "result boolean", _delete_branch
        ),
        Procedure("fast_forward", (_TABLE, Param("branch", required=True)), "result boolean", _fast_forward),
        Procedure(
            "rollback",
            (_TABLE, Param("version"), Param("snapshot", int, aliases=("snapshot_id",)), Param("tag")),
            _ROLLBACK_RESULT,
            _rollback,
        ),
        Procedure(
            "rollback_to",
            (_TABLE, Param("tag"), Param("snapshot", int, aliases=("snapshot_id",))),
            _ROLLBACK_RESULT,
            _rollback,
            flink=True,
        ),
        Procedure(
            "rollback_to_timestamp",
            (_TABLE, Param("timestamp", int, required=True)),
            _ROLLBACK_RESULT,
            _rollback_to_timestamp,
        ),
        Procedure(
            "expire_snapshots",
            (
                _TABLE,
                Param("retain_max", int),
                Param("retain_min", int),
                Param("older_than"),
                Param("max_deletes", int),
                _OPTIONS,
            ),
            "deleted_snapshots_count int",
            _expire_snapshots,
        ),
        Procedure(
            "remove_orphan_files",
            (_TABLE, Param("older_than"), Param("dry_run", bool), Param("parallelism", int), Param("mode")),
            "deletedFileCount bigint, deletedFileTotalLenInBytes bigint",
            _remove_orphan_files,
        ),
        Procedure(
            "reset_consumer",
            (
                _TABLE,
                Param("consumerId", required=True, aliases=("consumer_id",)),
                Param("nextSnapshotId", int, aliases=("next_snapshot_id",)),
            ),
            "result boolean",
            _reset_consumer,
        ),
        Procedure(
            "clear_consumers",
            (
                _TABLE,
                Param("includingConsumers", aliases=("including_consumers",)),
                Param("excludingConsumers", aliases=("excluding_consumers",)),
            ),
            "result boolean",
            _clear_consumers,
        ),
        Procedure(
            "merge_into",
            (Param("target_table", required=True), *(Param(n) for n in _MERGE_PARAMS)),
            "snapshot_id bigint, updated bigint, deleted bigint, inserted bigint",
            _merge_into,
            flink=True,
        ),
    )
}
PROCEDURES.update({p.name: p for p in (*LIFECYCLE_PROCEDURES, COMPACT_MANIFEST, PURGE_FILES)})


_KINDS = {int: "a number", bool: "a boolean", str: "a string"}


def _coerce(ctx: Context, procedure: Procedure, param: Param, value: Any) -> Any:
    """An argument's value as its parameter's type (``'10'`` for a number, ``'true'`` for a boolean)."""
    if value is None:
        return None
    try:
        if param.kind is bool:
            return value if isinstance(value, bool) else opts.parse_bool(str(value))
        if param.kind is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(value)
    except ValueError:
        raise ctx.error(
            f"sys.{procedure.name}: argument {param.name!r} takes {_KINDS[param.kind]}, not {value!r}"
        ) from None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _arguments(ctx: Context, procedure: Procedure, nodes: Sequence[exp.Expr]) -> dict[str, Any]:
    """Positional and named arguments, by Spark name, coerced; required ones checked."""
    by_name = {n.lower(): p for p in (*procedure.params, *procedure.named_only) for n in (p.name, *p.aliases)}
    values: dict[str, Any] = {}
    named = False
    for position, node in enumerate(nodes):
        # ``name => value``; ``name = value`` too (Paimon's own docs write it so once)
        if isinstance(node, (exp.Kwarg, exp.EQ)) and isinstance(
            node.this, (exp.Var, exp.Column, exp.Identifier)
        ):
            named = True
            key = node.this.name
            param = by_name.get(key.lower())
            if param is None:
                hint = difflib.get_close_matches(key.lower(), list(by_name), n=1)
                known = ", ".join(p.name for p in procedure.params)
                raise ctx.error(
                    f"sys.{procedure.name} has no argument {key!r}"
                    + (f" (did you mean {hint[0]!r}?)" if hint else "")
                    + f"; its arguments are {known}"
                )
            node = node.expression
        else:
            if named:
                raise ctx.error("positional arguments must come before named ones")
            if position >= len(procedure.params):
                raise ctx.error(f"sys.{procedure.name} takes at most {len(procedure.params)} arguments")
            param = procedure.params[position]
        if param.name in values:
            raise ctx.error(f"argument {param.name!r} of sys.{procedure.name} is given twice")
        values[param.name] = _coerce(ctx, procedure, param, evaluate(ctx.spark, node))
    missing = [p.name for p in procedure.params if p.required and values.get(p.name) in (None, "")]
    if missing:
        raise ctx.error(f"sys.{procedure.name} needs {', '.join(missing)}")
    return values


def _function(ctx: Context, rest: str) -> tuple[list[str], exp.Anonymous]:
    """``[catalog.]sys.name(args)`` as (the name's parts, the call)."""
    try:
        parsed = sqlglot.parse_one("SELECT " + rest, read="spark")
    except ParseError as exc:
        raise ctx.error(f"cannot read the call ({str(exc).splitlines()[0]})") from None
    node = parsed.expressions[0] if isinstance(parsed, exp.Select) and len(parsed.expressions) == 1 else None
    prefix: list[str] = []
    while isinstance(node, exp.Dot):
        prefix = [*_names(node.this), *prefix]
        node = node.expression
    if not isinstance(node, exp.Anonymous):
        raise ctx.error("CALL takes [catalog.]sys.<procedure>(arguments)")
    return [*prefix, node.name], node


def _names(node: exp.Expr) -> list[str]:
    if isinstance(node, exp.Dot):
        return [*_names(node.this), *_names(node.expression)]
    return [node.name]


def call(ctx: Context, rest: str) -> DataFrame:
    """Run ``CALL <rest>``.

    Raises:
        ProcedureNotFoundError: no such procedure (the names and the close one are in the message).
        ProcedureUnsupportedError: one of Paimon's procedures that does not run here (the message says why).
        SqlError: a malformed call, an unknown or missing argument, a value of the wrong type.
    """
    parts, function = _function(ctx, rest)
    if len(parts) < 2 or parts[-2].lower() != "sys" or len(parts) > 3:
        raise ctx.error("CALL takes [catalog.]sys.<procedure>(arguments)")
    if len(parts) == 3:
        catalog = ctx.resolver.catalogs.get(parts[0])
        if catalog is None:
            raise ctx.error(f"{parts[0]!r} is not a Paimon catalog (spark.sql.catalog.{parts[0]}.warehouse)")
    else:
        catalog = ctx.resolver.default_catalog()
        if catalog is None:
            raise ctx.error(
                "no Paimon catalog to call it in: set spark.sql.catalog.paimon.warehouse, or name the catalog"
            )
    name = parts[-1].lower()
    procedure = PROCEDURES.get(name)
    if procedure is None and name in UNSUPPORTED_PROCEDURES:
        raise ProcedureUnsupportedError(name, UNSUPPORTED_PROCEDURES[name])
    if procedure is None:
        raise ProcedureNotFoundError(name, list(PROCEDURES))
    args = _arguments(ctx, procedure, function.expressions)
    invocation = Call(ctx, catalog, args)
    rows = procedure.run(invocation)
    target = args.get("table") or args.get("target_table")
    if target and not target.endswith("*"):  # views of a table read it anew after a procedure changed it
        refresh_views(ctx.spark, ctx.run_sql, invocation.name_of(target))
    return ctx.rows(procedure.schema, rows)
