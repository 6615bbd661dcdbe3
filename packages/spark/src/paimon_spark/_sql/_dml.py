"""``INSERT INTO / OVERWRITE``, ``DELETE``, ``UPDATE`` and ``MERGE INTO`` of Paimon tables.

``INSERT`` runs its query with Spark and writes the rows through the ``paimon`` data source, columns
matched as Spark matches them (by position; by the column list; ``BY NAME``), static ``PARTITION (k = v)``
values added, each column cast to the table's type. ``INSERT OVERWRITE`` replaces the whole table, the
partitions of a static ``PARTITION`` spec (empty ones too), or with ``spark.sql.sources.partitionOverwriteMode
= dynamic`` the partitions the rows hold.

``DELETE`` / ``UPDATE`` / ``MERGE INTO`` are :func:`~paimon_spark.delete_from`, :func:`~paimon_spark.update`
and :func:`~paimon_spark.merge_into`: primary-key tables take row-kind upserts and deletes, append tables are
rewritten copy-on-write. Several ``WHEN`` clauses of one kind are folded into the one action of each kind
those take (each clause's condition made to hold only where no earlier clause's does, settings chosen by
``CASE``), so the first clause that holds decides a row, as in Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from sqlglot import exp
from sqlglot.tokenizer_core import TokenType

from paimon_core.table import Table
from paimon_core.types import RowType
from paimon_spark._commands import delete_from, merge_into, update
from paimon_spark._options import OVERWRITE_PARTITION, SPARK_OVERWRITE_MODE_CONF, is_paimon_option
from paimon_spark._sql._context import Context
from paimon_spark._sql._ddl import partition_spec
from paimon_spark._sql._names import PaimonName
from paimon_spark._sql._query import meta_end, paimon_references, read_table, run_query, table_parts
from paimon_spark._sql._views import refresh_views
from paimon_spark._types import to_spark_type

__all__ = ["delete", "insert", "merge", "update_rows"]


def _writable(ctx: Context, name: PaimonName) -> Table:
    if name.system is not None:
        raise ctx.error(f"{name.display} is a system table: it cannot be written")
    return ctx.open(name)


# --- INSERT --------------------------------------------------------------------------------------------------


def _query_start(ctx: Context, statement: exp.Insert) -> int:
    """Where the query of an INSERT begins: after the target, its PARTITION spec and column list, and any
    ``BY NAME`` / ``IF NOT EXISTS`` words."""
    position = meta_end(statement.this) or 0
    for token in ctx.tokens:
        if token.start < position:
            continue
        if token.token_type == TokenType.R_PAREN or token.text.upper() in (
            "BY",
            "NAME",
            "IF",
            "NOT",
            "EXISTS",
        ):
            continue
        return token.start
    raise ctx.error("INSERT needs a query or VALUES")


def _aligned(
    ctx: Context,
    table: Table,
    data: DataFrame,
    spec: dict[str, Any],
    columns: list[str] | None,
    by_name: bool,
) -> DataFrame:
    """The query's rows as the table's columns, in order, cast to their types."""
    fields = table.schema.fields
    static = {k.lower() for k in spec}
    given = data.columns
    if by_name:
        lowered = {c.lower(): c for c in given}
        extra = [c for c in given if c.lower() not in {f.name.lower() for f in fields}]
        if extra:
            raise ctx.error(f"the query's columns {extra} are not columns of {table.identifier}")
        source = {f.name.lower(): lowered[f.name.lower()] for f in fields if f.name.lower() in lowered}
    else:
        targets = columns if columns is not None else [f.name for f in fields if f.name.lower() not in static]
        if len(targets) != len(given):
            raise ctx.error(
                f"the query gives {len(given)} columns, the insert takes {len(targets)} ({', '.join(targets)})"
            )
        source = {t.lower(): g for t, g in zip(targets, given, strict=True)}
    unknown = [c for c in source if c not in {f.name.lower() for f in fields}]
    if unknown:
        raise ctx.error(f"{unknown} are not columns of {table.identifier} ({table.field_names})")
    values = {k.lower(): v for k, v in spec.items()}
    selected: list[Column] = []
    for field in fields:
        key = field.name.lower()
        spark_type = to_spark_type(field.type)
        if key in values:
            value = F.lit(values[key])
        elif key in source:
            value = F.col(f"`{source[key]}`")
        else:
            value = F.lit(None)
        selected.append(value.cast(spark_type).alias(field.name))
    return data.select(*selected)


def insert(ctx: Context, statement: exp.Insert) -> DataFrame:
    """``INSERT INTO | OVERWRITE [TABLE] name [PARTITION (...)] [(columns) | BY NAME] query``."""
    target = statement.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    name = ctx.paimon_table(table_parts(target))
    table = _writable(ctx, name)
    partition = target.args.get("partition")
    spec = partition_spec(ctx, table, partition.expressions) if partition is not None else {}
    references = paimon_references(statement.args["expression"], ctx.resolver, ctx.tokens)
    query = run_query(
        ctx.spark, ctx.run_sql, ctx.text, _query_start(ctx, statement), len(ctx.text), references, ctx.args
    )
    data = _aligned(ctx, table, query, spec, columns, bool(statement.args.get("by_name")))
    options = name.source_options()
    overwrite = bool(statement.args.get("overwrite"))
    if overwrite and spec:
        options[OVERWRITE_PARTITION] = ",".join(f"{k}={v}" for k, v in spec.items())
    elif overwrite:  # the session's mode now, not the one captured when the source was registered
        options["partitionOverwriteMode"] = (
            ctx.spark.conf.get(SPARK_OVERWRITE_MODE_CONF, "static") or "static"
        )
    data.write.format("paimon").options(**options).mode("overwrite" if overwrite else "append").save()
    refresh_views(ctx.spark, ctx.run_sql, name)
    return ctx.done()


# --- DELETE / UPDATE -----------------------------------------------------------------------------------------


def _target_args(ctx: Context, name: PaimonName) -> dict[str, Any]:
    """``warehouse``, ``table``, ``catalog_conf`` and ``options`` of the row-level functions."""
    source = name.source_options()
    warehouse = source.pop("warehouse", None)
    identifier = source.pop("table")
    source.pop("catalog", None)
    if warehouse is None:
        raise ctx.error(f"{name.display} is a view of a table directory: name the table by its catalog")
    dynamic = {k: v for k, v in source.items() if is_paimon_option(k)}
    storage = {k: v for k, v in source.items() if k not in dynamic}
    return {"warehouse": warehouse, "table": identifier, "catalog_conf": storage, "options": dynamic}


def _requalified(node: exp.Expr, aliases: Sequence[str], to: str) -> exp.Expr:
    """``node`` with column qualifiers in ``aliases`` replaced by ``to``."""
    lowered = {a.lower() for a in aliases}

    def swap(child: exp.Expr) -> exp.Expr:
        if isinstance(child, exp.Column) and child.table and child.table.lower() in lowered:
            return exp.column(child.name, table=to, quoted=True)
        return child

    return node.copy().transform(swap)


def delete(ctx: Context, statement: exp.Delete) -> DataFrame:
    """``DELETE FROM name [[AS] alias] [WHERE condition]``."""
    target = statement.this
    name = ctx.paimon_table(table_parts(target))
    _writable(ctx, name)
    args = _target_args(ctx, name)
    where = statement.args.get("where")
    condition = where.this if where is not None else exp.true()
    alias = target.alias_or_name
    text = _requalified(condition, [alias], _short(args["table"])).sql(dialect="spark")
    delete_from(ctx.spark, where=text, **args)
    refresh_views(ctx.spark, ctx.run_sql, name)
    return ctx.done()


def _short(identifier: str) -> str:
    """The name the row-level functions give the table in their expressions: its last part."""
    return identifier.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[-1]


def update_rows(ctx: Context, statement: exp.Update) -> DataFrame:
    """``UPDATE name [[AS] alias] SET col = expr, struct_col.field = expr, ... [WHERE condition]``."""
    target = statement.this
    name = ctx.paimon_table(table_parts(target))
    table = _writable(ctx, name)
    args = _target_args(ctx, name)
    short = _short(args["table"])
    qualifiers = [target.alias_or_name, short]
    paths: dict[tuple[str, ...], str] = {}
    columns = {f.name.lower() for f in table.schema.fields}
    for assignment in statement.expressions:
        if not isinstance(assignment, exp.EQ):
            raise ctx.error(f"SET {assignment.sql(dialect='spark')}: expected column = expression")
        path = [p.name for p in assignment.this.parts]
        if (
            len(path) > 1
            and path[0].lower() not in columns
            and path[0].lower() in {q.lower() for q in qualifiers}
        ):
            path = path[1:]
        paths[tuple(path)] = _requalified(assignment.expression, qualifiers, short).sql(dialect="spark")
    setting = _struct_settings(ctx, table, paths, short)
    where = statement.args.get("where")
    condition = (
        _requalified(where.this, qualifiers, short).sql(dialect="spark") if where is not None else None
    )
    update(ctx.spark, set=setting, where=condition, **args)
    refresh_views(ctx.spark, ctx.run_sql, name)
    return ctx.done()


def _struct_settings(
    ctx: Context, table: Table, paths: dict[tuple[str, ...], str], alias: str
) -> dict[str, str]:
    """Assignments to top-level columns; ``s.c2 = x`` becomes ``s = named_struct('c1', s.c1, 'c2', x)``."""
    types = {f.name.lower(): f for f in table.schema.fields}
    top: dict[str, dict[tuple[str, ...], str]] = {}
    for path, expression in paths.items():
        field = types.get(path[0].lower())
        if field is None:
            raise ctx.error(f"{path[0]!r} is not a column of {table.identifier} ({table.field_names})")
        top.setdefault(field.name, {})[path[1:]] = expression
    setting = {}
    for column, assignments in top.items():
        if () in assignments:
            if len(assignments) > 1:
                raise ctx.error(f"{column!r} is assigned whole and by field")
            setting[column] = assignments[()]
        else:
            setting[column] = _struct(ctx, types[column.lower()].type, f"`{alias}`.`{column}`", assignments)
    return setting


def _struct(ctx: Context, row: Any, reference: str, assignments: dict[tuple[str, ...], str]) -> str:
    if not isinstance(row, RowType):
        raise ctx.error(f"{reference} is not a struct: its fields cannot be set")
    pieces = []
    known = {f.name.lower() for f in row.fields}
    unknown = [".".join(p) for p in assignments if p[0].lower() not in known]
    if unknown:
        raise ctx.error(f"{reference} has no fields {unknown}")
    for field in row.fields:
        inner = {p[1:]: e for p, e in assignments.items() if p[0].lower() == field.name.lower()}
        nested = f"{reference}.`{field.name}`"
        if not inner:
            value = nested
        elif () in inner:
            value = inner[()]
        else:
            value = _struct(ctx, field.type, nested, inner)
        pieces.append(f"'{field.name}', {value}")
    return f"named_struct({', '.join(pieces)})"


# --- MERGE INTO ----------------------------------------------------------------------------------------------


def _coalesced(condition: exp.Expr | None) -> exp.Expr:
    return exp.func("coalesce", exp.paren(condition), exp.false()) if condition is not None else exp.true()


def _first_wins(whens: Sequence[exp.When]) -> list[tuple[exp.When, exp.Expr]]:
    """Each clause with a condition that holds where its own does and no earlier clause's does."""
    out = []
    earlier: list[exp.Expr] = []
    for when in whens:
        own = _coalesced(when.args.get("condition"))
        effective = own if not earlier else exp.and_(own, exp.not_(exp.paren(exp.or_(*earlier))))
        out.append((when, effective))
        if when.args.get("condition") is None:
            break  # later clauses of this kind can never run
        earlier.append(own)
    return out


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect="spark")


def _update_setting(
    ctx: Context, clauses: list[tuple[exp.When, exp.Expr]], table: Table, t_alias: str, s_alias: str
) -> tuple[str, str] | None:
    """(condition, setting) of the clauses' updates, folded into one."""
    updates = [(w, c) for w, c in clauses if isinstance(w.args.get("then"), exp.Update)]
    if not updates:
        return None
    if len(updates) == 1:
        when, condition = updates[0]
        return _sql(condition), _setting(when.args["then"], table, s_alias)
    per_column: dict[str, list[tuple[exp.Expr, str]]] = {}
    for when, condition in updates:
        for column, value in _assignments(when.args["then"], table, s_alias).items():
            per_column.setdefault(column, []).append((condition, value))
    setting = []
    for column, cases in per_column.items():
        branches = " ".join(f"WHEN {_sql(c)} THEN {v}" for c, v in cases)
        setting.append(f"`{column}` = CASE {branches} ELSE `{t_alias}`.`{column}` END")
    return _sql(exp.or_(*(c for _, c in updates))), ", ".join(setting)


def _assignments(update_node: exp.Update, table: Table, s_alias: str) -> dict[str, str]:
    if any(isinstance(e, exp.Star) for e in update_node.expressions):
        return {f.name: f"`{s_alias}`.`{f.name}`" for f in table.schema.fields}
    return {e.this.name: _sql(e.expression) for e in update_node.expressions}


def _setting(update_node: exp.Update, table: Table, s_alias: str) -> str:
    if any(isinstance(e, exp.Star) for e in update_node.expressions):
        return "*"
    return ", ".join(f"`{c}` = {v}" for c, v in _assignments(update_node, table, s_alias).items())


def _delete_condition(clauses: list[tuple[exp.When, exp.Expr]]) -> str | None:
    deletes = [c for w, c in clauses if not isinstance(w.args.get("then"), (exp.Update, exp.Insert))]
    return _sql(exp.or_(*deletes)) if deletes else None


def _insert_values(
    ctx: Context, clauses: list[tuple[exp.When, exp.Expr]], table: Table, s_alias: str
) -> tuple[str, str] | None:
    """(condition, values in the table's column order) of the NOT MATCHED inserts, folded into one."""
    inserts = [(w, c) for w, c in clauses if isinstance(w.args.get("then"), exp.Insert)]
    if not inserts:
        return None
    rows = [(_insert_row(ctx, w.args["then"], table, s_alias), c) for w, c in inserts]
    if len(rows) == 1 and rows[0][0] is None:
        return _sql(rows[0][1]), "*"
    values = []
    for field in table.schema.fields:
        key = field.name.lower()
        cases = [
            (c, (row or {}).get(key, "NULL") if row is not None else f"`{s_alias}`.`{field.name}`")
            for row, c in rows
        ]
        if len(cases) == 1:
            values.append(cases[0][1])
        else:
            values.append("CASE " + " ".join(f"WHEN {_sql(c)} THEN {v}" for c, v in cases) + " END")
    return _sql(exp.or_(*(c for _, c in rows))), ", ".join(values)


def _insert_row(ctx: Context, node: exp.Insert, table: Table, s_alias: str) -> dict[str, str] | None:
    """``INSERT (cols) VALUES (...)`` as {column: value}; None for ``INSERT *``."""
    if isinstance(node.this, exp.Star):
        return None
    columns = [c.name.lower() for c in node.this.expressions]
    values = node.args["expression"].expressions
    if len(columns) != len(values):
        raise ctx.error(f"INSERT names {len(columns)} columns and gives {len(values)} values")
    known = {f.name.lower() for f in table.schema.fields}
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise ctx.error(f"INSERT names {unknown}, which are not columns of {table.identifier}")
    return {c: _sql(v) for c, v in zip(columns, values, strict=True)}


def _qualify_bare(when: exp.When, alias: str) -> exp.When:
    """Unqualified columns of a clause refer to one side: the source's for NOT MATCHED, the target's for
    NOT MATCHED BY SOURCE (Spark resolves them so)."""

    def qualify(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table:
            return exp.column(node.name, table=alias, quoted=True)
        return node

    copy = when.copy()
    condition = copy.args.get("condition")
    if condition is not None:
        copy.set("condition", condition.transform(qualify))
    then = copy.args.get("then")
    if isinstance(then, exp.Insert) and isinstance(then.args.get("expression"), exp.Tuple):
        then.set("expression", then.args["expression"].transform(qualify))
    if isinstance(then, exp.Update):
        for assignment in then.expressions:
            if isinstance(assignment, exp.EQ):
                assignment.set("expression", assignment.expression.transform(qualify))
    return copy


def _source_frame(ctx: Context, statement: exp.Merge) -> tuple[DataFrame, str]:
    using = statement.args["using"]
    if isinstance(using, exp.Table):
        parts = table_parts(using)
        name = ctx.resolver.table(parts)
        frame = read_table(ctx.spark, name) if name is not None else ctx.spark.table(".".join(parts))
        return frame, using.alias_or_name
    if not isinstance(using, exp.Subquery) or not using.alias:
        raise ctx.error("MERGE INTO ... USING takes a table or a subquery with an alias")
    start, end = _subquery_span(ctx, statement)
    references = paimon_references(using.this, ctx.resolver, ctx.tokens)
    return run_query(ctx.spark, ctx.run_sql, ctx.text, start, end, references, ctx.args), using.alias


def _subquery_span(ctx: Context, statement: exp.Merge) -> tuple[int, int]:
    """The text inside the parentheses after USING."""
    begin = meta_end(statement.this) or 0
    depth, start = 0, None
    for token in ctx.tokens:
        if token.start < begin:
            continue
        if token.token_type == TokenType.L_PAREN:
            if depth == 0 and start is None:
                start = token.end + 1
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0 and start is not None:
                return start, token.start
    raise ctx.error("cannot find the subquery after USING")


def merge(ctx: Context, statement: exp.Merge) -> DataFrame:
    """``MERGE INTO target [AS t] USING source [AS s] ON cond WHEN [NOT] MATCHED [BY SOURCE] [AND c] THEN ...``."""
    target = statement.this
    name = ctx.paimon_table(table_parts(target))
    table = _writable(ctx, name)
    args = _target_args(ctx, name)
    t_alias = target.alias_or_name
    source, s_alias = _source_frame(ctx, statement)
    whens = statement.args["whens"].expressions
    matched = _first_wins([w for w in whens if w.args.get("matched")])
    inserts = _first_wins(
        [_qualify_bare(w, s_alias) for w in whens if not w.args.get("matched") and not w.args.get("source")]
    )
    by_source = _first_wins(
        [_qualify_bare(w, t_alias) for w in whens if not w.args.get("matched") and w.args.get("source")]
    )
    upsert = _update_setting(ctx, matched, table, t_alias, s_alias)
    unmatched_upsert = _update_setting(ctx, by_source, table, t_alias, s_alias)
    insert_values = _insert_values(ctx, inserts, table, s_alias)
    merge_into(
        ctx.spark,
        warehouse=args["warehouse"],
        target_table=args["table"],
        catalog_conf=args["catalog_conf"],
        options=args["options"],
        merge_condition=_sql(statement.args["on"]),
        source_table=source,
        source_alias=s_alias,
        target_alias=t_alias,
        matched_upsert_condition=upsert[0] if upsert else None,
        matched_upsert_setting=upsert[1] if upsert else None,
        matched_delete_condition=_delete_condition(matched),
        not_matched_by_source_upsert_condition=unmatched_upsert[0] if unmatched_upsert else None,
        not_matched_by_source_upsert_setting=unmatched_upsert[1] if unmatched_upsert else None,
        not_matched_by_source_delete_condition=_delete_condition(by_source),
        not_matched_insert_condition=insert_values[0] if insert_values else None,
        not_matched_insert_values=insert_values[1] if insert_values else None,
    )
    refresh_views(ctx.spark, ctx.run_sql, name)
    return ctx.done()
