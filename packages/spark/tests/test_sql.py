"""Paimon's Spark SQL documentation examples, each run through ``paimon_spark.sql`` with its result checked.

The statements are the ones of Paimon's Spark pages (SQL DDL, SQL Alter, SQL Write, SQL Query, Procedures,
system tables), in a warehouse of their own per example; a few rows of setup make their results visible.
Each example's last statement is the one whose rows are checked (``rows``), or ``check`` looks at the table.
The examples that start from ``T_WITH_SNAPSHOTS`` (a table with three snapshots) start from a copy of one
warehouse those statements made once per module, which spares three Spark jobs each.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import paimon_spark
from paimon_core import Catalog
from paimon_core.consumer import ConsumerManager
from paimon_core.tag import TagManager
from paimon_spark._sql import state_of

pytestmark = pytest.mark.slow

CATALOG_CONF = "spark.sql.catalog.paimon.warehouse"


@dataclass(frozen=True)
class Example:
    """Statements run in order; the last one's rows must equal ``rows`` (sorted), and ``check`` holds."""

    id: str
    statements: tuple[str, ...]
    rows: list[tuple[Any, ...]] | None = None
    check: Callable[[Catalog], None] | None = field(default=None)


def _table(catalog: Catalog, name: str = "default.my_table") -> Any:
    return catalog.get_table(name)


def _fields(catalog: Catalog, name: str = "default.my_table") -> list[tuple[str, str]]:
    return [(f.name, str(f.type)) for f in _table(catalog, name).schema.fields]


MY_TABLE = (
    "CREATE TABLE my_table (user_id BIGINT, item_id BIGINT, behavior STRING, dt STRING, hh STRING) "
    "PARTITIONED BY (dt, hh) TBLPROPERTIES ('primary-key' = 'dt,hh,user_id')"
)
SIMPLE = "CREATE TABLE my_table (id INT, col_a INT, col_b STRING, c0 STRING)"
TARGET = (
    "CREATE TABLE target (a INT, b INT, c STRING) TBLPROPERTIES ('primary-key' = 'a')",
    "INSERT INTO target VALUES (1, 1, 'c1'), (5, 5, 'c5'), (7, 7, 'c7')",
    "CREATE OR REPLACE TEMPORARY VIEW source AS SELECT * FROM VALUES "
    "(1, 10, 'c3'), (5, 50, 'c1'), (7, 70, 'c0'), (9, 90, 'c99') AS s(a, b, c)",
)
T_WITH_SNAPSHOTS = (
    "CREATE TABLE T (id INT, v STRING)",
    "INSERT INTO T VALUES (1, 'a')",
    "INSERT INTO T VALUES (2, 'b')",
    "INSERT INTO T VALUES (3, 'c')",
)


def _check_pk(catalog: Catalog) -> None:
    schema = _table(catalog).schema
    assert (schema.primary_keys, schema.partition_keys) == (("dt", "hh", "user_id"), ())
    assert [f.name for f in schema.fields] == ["user_id", "item_id", "behavior", "dt", "hh"]


def _check_partitioned(catalog: Catalog) -> None:
    assert _table(catalog).schema.partition_keys == ("dt", "hh")


def _check_ctas(
    name: str, partitions: tuple[str, ...], keys: tuple[str, ...], **options: str
) -> Callable[[Catalog], None]:
    def check(catalog: Catalog) -> None:
        schema = _table(catalog, f"default.{name}").schema
        assert (schema.partition_keys, schema.primary_keys) == (partitions, keys)
        assert all(schema.options.get(k) == v for k, v in options.items())

    return check


def _check_options(expected: dict[str, str | None], comment: str | None = None) -> Callable[[Catalog], None]:
    def check(catalog: Catalog) -> None:
        schema = _table(catalog).schema
        assert {k: schema.options.get(k) for k in expected} == expected
        assert schema.comment == comment

    return check


def _check_fields(expected: list[tuple[str, str]]) -> Callable[[Catalog], None]:
    return lambda catalog: _check_equal(_fields(catalog), expected)


def _check_equal(actual: Any, expected: Any) -> None:
    assert actual == expected


def _check_tags(expected: dict[str, int]) -> Callable[[Catalog], None]:
    def check(catalog: Catalog) -> None:
        table = _table(catalog, "default.T")
        assert {t.name: t.snapshot.id for t in TagManager(table.storage, table.path).tags()} == expected

    return check


def _check_renamed(catalog: Catalog) -> None:
    assert catalog.list_tables("default") == ["my_table_new"]


def _check_comment(catalog: Catalog) -> None:
    assert _table(catalog).schema.fields[2].description == "buy count"


def _check_consumers(expected: dict[str, int]) -> Callable[[Catalog], None]:
    def check(catalog: Catalog) -> None:
        table = _table(catalog, "default.T")
        assert ConsumerManager(table.storage, table.path).consumers() == expected

    return check


def _check_latest(snapshot: int) -> Callable[[Catalog], None]:
    return lambda catalog: _check_equal(_table(catalog, "default.T").snapshot_manager.latest_id(), snapshot)


def _rollback(example_id: str, *statements: str, to: int) -> Example:
    """A rollback of ``T_WITH_SNAPSHOTS``'s table: it returns (the latest snapshot before, ``to``), and ``to``
    is the latest snapshot after."""
    return Example(example_id, (*T_WITH_SNAPSHOTS, *statements), rows=[(3, to)], check=_check_latest(to))


DDL = [
    Example("create-table-primary-key", (MY_TABLE.replace("PARTITIONED BY (dt, hh) ", ""),), check=_check_pk),
    Example("create-table-partitioned", (MY_TABLE,), check=_check_partitioned),
    Example(
        "ctas",
        (
            "CREATE TABLE my_table (user_id BIGINT, item_id BIGINT)",
            "INSERT INTO my_table VALUES (1, 2)",
            "CREATE TABLE my_table_as AS SELECT * FROM my_table",
            "SELECT * FROM my_table_as",
        ),
        rows=[(1, 2)],
    ),
    Example(
        "ctas-partitioned",
        (
            "CREATE TABLE my_table (user_id BIGINT, item_id BIGINT, behavior STRING, dt STRING, hh STRING) "
            "PARTITIONED BY (dt, hh)",
            "CREATE TABLE my_table_partition_as PARTITIONED BY (dt) AS SELECT * FROM my_table",
        ),
        check=_check_ctas("my_table_partition_as", ("dt",), ()),
    ),
    Example(
        "ctas-tblproperties",
        (
            "CREATE TABLE my_table (user_id BIGINT, item_id BIGINT) TBLPROPERTIES ('file.format' = 'parquet')",
            "CREATE TABLE my_table_options_as TBLPROPERTIES ('file.format' = 'parquet') AS SELECT * FROM my_table",
        ),
        check=_check_ctas("my_table_options_as", (), (), **{"file.format": "parquet"}),
    ),
    Example(
        "ctas-primary-key",
        (
            MY_TABLE.replace("PARTITIONED BY (dt, hh) ", ""),
            "CREATE TABLE my_table_pk_as TBLPROPERTIES ('primary-key' = 'dt') AS SELECT * FROM my_table",
        ),
        check=_check_ctas("my_table_pk_as", (), ("dt",)),
    ),
    Example(
        "ctas-primary-key-partition",
        (
            MY_TABLE,
            "INSERT INTO my_table VALUES (1, 10, 'pv', '2024-01-01', '01')",
            "CREATE TABLE my_table_all_as PARTITIONED BY (dt) TBLPROPERTIES ('primary-key' = 'dt,hh') "
            "AS SELECT * FROM my_table",
            "SELECT user_id, dt, hh FROM my_table_all_as",
        ),
        rows=[(1, "2024-01-01", "01")],
    ),
    Example(
        "show-databases",
        ("CREATE DATABASE db1", "CREATE DATABASE db2", "SHOW DATABASES"),
        rows=[("db1",), ("db2",), ("default",)],
    ),
    Example(
        "show-tables",
        (MY_TABLE, "CREATE TABLE other (id INT)", "SHOW TABLES"),
        rows=[("default", "my_table", False), ("default", "other", False)],
    ),
    Example(
        "show-partitions",
        (
            MY_TABLE,
            "INSERT INTO my_table VALUES (1, 1, 'pv', '20230817', '01'), (2, 1, 'pv', '20230818', '02')",
            "SHOW PARTITIONS my_table PARTITION (dt='20230817')",
        ),
        rows=[("dt=20230817/hh=01",)],
    ),
    Example(
        "show-columns",
        (SIMPLE, "SHOW COLUMNS FROM my_table"),
        rows=[("c0",), ("col_a",), ("col_b",), ("id",)],
    ),
    Example(
        "describe",
        (
            "CREATE TABLE my_table (id INT COMMENT 'the id', pt STRING) PARTITIONED BY (pt)",
            "DESCRIBE TABLE my_table",
        ),
        rows=[
            ("# Partition Information", "", ""),
            ("# col_name", "data_type", "comment"),
            ("id", "int", "the id"),
            ("pt", "string", None),
            ("pt", "string", None),
        ],
    ),
    Example("drop-table", (SIMPLE, "DROP TABLE my_table", "SHOW TABLES"), rows=[]),
    Example(
        "drop-database-cascade",
        ("CREATE DATABASE db", "CREATE TABLE db.t (id INT)", "DROP DATABASE db CASCADE", "SHOW DATABASES"),
        rows=[("default",)],
    ),
]

ALTER = [
    Example(
        "set-tblproperties",
        (SIMPLE, "ALTER TABLE my_table SET TBLPROPERTIES ('write-buffer-size' = '256 MB')"),
        check=_check_options({"write-buffer-size": "256 MB"}),
    ),
    Example(
        "unset-tblproperties",
        (
            SIMPLE,
            "ALTER TABLE my_table SET TBLPROPERTIES ('write-buffer-size' = '256 MB')",
            "ALTER TABLE my_table UNSET TBLPROPERTIES ('write-buffer-size')",
        ),
        check=_check_options({"write-buffer-size": None}),
    ),
    Example(
        "set-comment",
        (SIMPLE, "ALTER TABLE my_table SET TBLPROPERTIES ('comment' = 'table comment')"),
        check=_check_options({}, "table comment"),
    ),
    Example(
        "unset-comment",
        (
            SIMPLE,
            "ALTER TABLE my_table SET TBLPROPERTIES ('comment' = 'table comment')",
            "ALTER TABLE my_table UNSET TBLPROPERTIES ('comment')",
        ),
        check=_check_options({}, None),
    ),
    Example(
        "rename-table",
        (
            SIMPLE,
            "INSERT INTO my_table VALUES (1, 2, 'b', 'c')",
            "ALTER TABLE my_table RENAME TO my_table_new",
            "SELECT id FROM my_table_new",
        ),
        rows=[(1,)],
    ),
    Example(
        "add-columns",
        (SIMPLE, "ALTER TABLE my_table ADD COLUMNS (c1 INT, c2 STRING)"),
        check=_check_fields(
            [
                ("id", "INT"),
                ("col_a", "INT"),
                ("col_b", "STRING"),
                ("c0", "STRING"),
                ("c1", "INT"),
                ("c2", "STRING"),
            ]
        ),
    ),
    Example(
        "rename-column",
        (
            SIMPLE,
            "INSERT INTO my_table VALUES (1, 2, 'b', 'zero')",
            "ALTER TABLE my_table RENAME COLUMN c0 TO c1",
            "SELECT c1 FROM my_table",
        ),
        rows=[("zero",)],
    ),
    Example(
        "drop-columns",
        (SIMPLE, "ALTER TABLE my_table DROP COLUMNS (col_b, c0)"),
        check=_check_fields([("id", "INT"), ("col_a", "INT")]),
    ),
    Example(
        "column-comment",
        (
            "CREATE TABLE my_table (id INT, name STRING, buy_count INT)",
            "ALTER TABLE my_table ALTER COLUMN buy_count COMMENT 'buy count'",
        ),
        check=_check_comment,
    ),
    Example(
        "add-column-first",
        (SIMPLE, "ALTER TABLE my_table ADD COLUMN c INT FIRST"),
        check=lambda c: _check_equal([f[0] for f in _fields(c)], ["c", "id", "col_a", "col_b", "c0"]),
    ),
    Example(
        "add-column-after",
        (SIMPLE, "ALTER TABLE my_table ADD COLUMN c INT AFTER col_b"),
        check=lambda c: _check_equal([f[0] for f in _fields(c)], ["id", "col_a", "col_b", "c", "c0"]),
    ),
    Example(
        "column-first",
        (SIMPLE, "ALTER TABLE my_table ALTER COLUMN col_a FIRST"),
        check=lambda c: _check_equal([f[0] for f in _fields(c)], ["col_a", "id", "col_b", "c0"]),
    ),
    Example(
        "column-after",
        (SIMPLE, "ALTER TABLE my_table ALTER COLUMN col_a AFTER col_b"),
        check=lambda c: _check_equal([f[0] for f in _fields(c)], ["id", "col_b", "col_a", "c0"]),
    ),
    Example(
        "column-type",
        (
            SIMPLE,
            "INSERT INTO my_table VALUES (1, 2, 'b', 'c')",
            "ALTER TABLE my_table ALTER COLUMN col_a TYPE DOUBLE",
            "SELECT col_a FROM my_table",
        ),
        rows=[(2.0,)],
    ),
    Example(
        "drop-partition",
        (
            "CREATE TABLE my_table (v INT, id INT, name STRING) PARTITIONED BY (id, name)",
            "INSERT INTO my_table VALUES (1, 1, 'paimon'), (2, 2, 'spark')",
            "ALTER TABLE my_table DROP PARTITION (`id` = 1, `name` = 'paimon')",
            "SELECT * FROM my_table",
        ),
        rows=[(2, 2, "spark")],
    ),
    Example(
        "create-tag",
        (
            *T_WITH_SNAPSHOTS,
            "ALTER TABLE T CREATE TAG `TAG-1`",
            "ALTER TABLE T CREATE TAG IF NOT EXISTS `TAG-1`",
            "ALTER TABLE T CREATE TAG `TAG-2` RETAIN 7 DAYS",
            "ALTER TABLE T CREATE TAG `TAG-3` AS OF VERSION 1",
            "ALTER TABLE T CREATE TAG `TAG-4` AS OF VERSION 2 RETAIN 12 HOURS",
        ),
        check=_check_tags({"TAG-1": 3, "TAG-2": 3, "TAG-3": 1, "TAG-4": 2}),
    ),
    Example(
        "replace-tag",
        (
            *T_WITH_SNAPSHOTS,
            "ALTER TABLE T CREATE TAG `TAG-4` AS OF VERSION 1",
            "ALTER TABLE T REPLACE TAG `TAG-4` AS OF VERSION 2 RETAIN 24 HOURS",
            "ALTER TABLE T CREATE OR REPLACE TAG `TAG-5` AS OF VERSION 2 RETAIN 24 HOURS",
        ),
        check=_check_tags({"TAG-4": 2, "TAG-5": 2}),
    ),
    Example(
        "delete-tag",
        (
            *T_WITH_SNAPSHOTS,
            "ALTER TABLE T CREATE TAG `TAG-1` AS OF VERSION 1",
            "ALTER TABLE T CREATE TAG `TAG-2` AS OF VERSION 2",
            "ALTER TABLE T CREATE TAG `TAG-3` AS OF VERSION 3",
            "ALTER TABLE T DELETE TAG `TAG-1`",
            "ALTER TABLE T DELETE TAG IF EXISTS `TAG-1`",
            "ALTER TABLE T DELETE TAG `TAG-2,TAG-3`",
        ),
        check=_check_tags({}),
    ),
    Example(
        "rename-tag",
        (
            *T_WITH_SNAPSHOTS,
            "ALTER TABLE T CREATE TAG `TAG-1` AS OF VERSION 2",
            "ALTER TABLE T RENAME TAG `TAG-1` TO `TAG-2`",
            "SHOW TAGS T",
        ),
        rows=[("TAG-2",)],
    ),
]

WRITE = [
    Example(
        "insert-overwrite-static",
        (
            "CREATE TABLE my_table (id INT, pt STRING) PARTITIONED BY (pt)",
            "INSERT INTO my_table VALUES (1, 'p1'), (2, 'p2')",
            "INSERT OVERWRITE my_table VALUES (3, 'p1')",
            "SELECT * FROM my_table",
        ),
        rows=[(3, "p1")],
    ),
    Example(
        "insert-overwrite-dynamic-key-static-mode",
        (
            "CREATE TABLE my_table (id INT, pt STRING) PARTITIONED BY (pt)",
            "INSERT INTO my_table VALUES (1, 'p1'), (2, 'p2')",
            "INSERT OVERWRITE my_table PARTITION (pt) VALUES (3, 'p1')",
            "SELECT * FROM my_table",
        ),
        rows=[(3, "p1")],
    ),
    Example(
        "insert-overwrite-partition",
        (
            "CREATE TABLE my_table (id INT, pt STRING) PARTITIONED BY (pt)",
            "INSERT INTO my_table VALUES (1, 'p1'), (2, 'p2')",
            "INSERT OVERWRITE my_table PARTITION (pt='p1') VALUES (3)",
            "SELECT * FROM my_table",
        ),
        rows=[(2, "p2"), (3, "p1")],
    ),
    Example(
        "insert-column-list",
        (
            "CREATE TABLE my_table (id INT, name STRING, pt STRING) PARTITIONED BY (pt)",
            "INSERT INTO my_table (pt, id) VALUES ('p1', 1)",
            "SELECT * FROM my_table",
        ),
        rows=[(1, None, "p1")],
    ),
    Example(
        "insert-by-name",
        (
            "CREATE TABLE t (a INT, b STRING)",
            "INSERT INTO t VALUES (1, '1'), (2, '2')",
            "INSERT INTO t BY NAME SELECT '3' AS b, 3 AS a",
            "SELECT * FROM t",
        ),
        rows=[(1, "1"), (2, "2"), (3, "3")],
    ),
    Example(
        "insert-into-primary-key",
        (
            "CREATE TABLE t (id INT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2')",
            "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
            "INSERT INTO t VALUES (1, 'a2')",
            "SELECT * FROM t",
        ),
        rows=[(1, "a2"), (2, "b")],
    ),
    Example(
        "truncate",
        (
            "CREATE TABLE my_table (id INT, dt STRING) PARTITIONED BY (dt)",
            "INSERT INTO my_table VALUES (1, '2025-01-01'), (2, '2025-01-02')",
            "TRUNCATE TABLE my_table PARTITION (dt = '2025-01-01')",
            "SELECT * FROM my_table",
        ),
        rows=[(2, "2025-01-02")],
    ),
    Example(
        "truncate-table",
        (
            SIMPLE,
            "INSERT INTO my_table VALUES (1, 2, 'b', 'c')",
            "TRUNCATE TABLE my_table",
            "SELECT count(*) FROM my_table",
        ),
        rows=[(0,)],
    ),
    Example(
        "update",
        (
            "CREATE TABLE t (id INT, s STRUCT<c1: INT, c2: STRING>, name STRING) "
            "TBLPROPERTIES ('primary-key' = 'id', 'merge-engine' = 'deduplicate')",
            "INSERT INTO t VALUES (1, named_struct('c1', 1, 'c2', 'x'), 'a'), (2, named_struct('c1', 2, 'c2', 'y'), 'b')",
            "UPDATE t SET name = 'a_new' WHERE id = 1",
            "UPDATE t SET s.c2 = 'a_new' WHERE s.c1 = 1",
            "SELECT id, s.c1, s.c2, name FROM t",
        ),
        rows=[(1, 1, "a_new", "a_new"), (2, 2, "y", "b")],
    ),
    Example(
        "update-append-table",
        (
            "CREATE TABLE t (id INT, name STRING)",
            "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
            "UPDATE t AS x SET name = upper(x.name) WHERE x.id = 2",
            "SELECT * FROM t",
        ),
        rows=[(1, "a"), (2, "B")],
    ),
    Example(
        "delete",
        (
            SIMPLE,
            "INSERT INTO my_table VALUES (1, 2, 'b', 'c'), (2, 3, 'd', 'e')",
            "DELETE FROM my_table WHERE id = 1",
            "SELECT id FROM my_table",
        ),
        rows=[(2,)],
    ),
    Example(
        "merge-upsert",
        (
            *TARGET,
            "MERGE INTO target USING source ON target.a = source.a WHEN MATCHED THEN UPDATE SET * "
            "WHEN NOT MATCHED THEN INSERT *",
            "SELECT * FROM target",
        ),
        rows=[(1, 10, "c3"), (5, 50, "c1"), (7, 70, "c0"), (9, 90, "c99")],
    ),
    Example(
        "merge-clauses",
        (
            *TARGET,
            "MERGE INTO target USING source ON target.a = source.a "
            "WHEN MATCHED AND target.a = 5 THEN UPDATE SET b = source.b + target.b "
            "WHEN MATCHED AND source.c > 'c2' THEN UPDATE SET * "
            "WHEN MATCHED THEN DELETE "
            "WHEN NOT MATCHED AND c > 'c9' THEN INSERT (a, b, c) VALUES (a, b * 1.1, c) "
            "WHEN NOT MATCHED THEN INSERT *",
            "SELECT * FROM target",
        ),
        rows=[(1, 10, "c3"), (5, 55, "c5"), (9, 99, "c99")],
    ),
    Example(
        "merge-append-table-subquery",
        (
            "CREATE TABLE t (id INT, v STRING)",
            "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
            "CREATE TABLE s (id INT, v STRING)",
            "INSERT INTO s VALUES (2, 'B'), (3, 'C')",
            "MERGE INTO t USING (SELECT * FROM s WHERE id > 1) AS src ON t.id = src.id "
            "WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT *",
            "SELECT * FROM t",
        ),
        rows=[(1, "a"), (2, "B"), (3, "C")],
    ),
]

QUERY = [
    Example(
        "version-as-of-snapshot", (*T_WITH_SNAPSHOTS, "SELECT * FROM T VERSION AS OF 1"), rows=[(1, "a")]
    ),
    Example(
        "version-as-of-tag",
        (
            *T_WITH_SNAPSHOTS,
            "ALTER TABLE T CREATE TAG `my-tag` AS OF VERSION 2",
            "SELECT * FROM T VERSION AS OF 'my-tag'",
        ),
        rows=[(1, "a"), (2, "b")],
    ),
    Example(
        "timestamp-as-of-seconds",
        (*T_WITH_SNAPSHOTS, "SELECT count(*) FROM T TIMESTAMP AS OF 4102444800"),
        rows=[(3,)],
    ),
    Example(
        "join-time-travel",
        (*T_WITH_SNAPSHOTS, "SELECT a.id FROM T a JOIN T VERSION AS OF 1 b ON a.id = b.id"),
        rows=[(1,)],
    ),
    Example(
        "cte-and-qualified-columns",
        (*T_WITH_SNAPSHOTS, "WITH x AS (SELECT * FROM T WHERE T.id > 1) SELECT x.v FROM x"),
        rows=[("b",), ("c",)],
    ),
    Example(
        "snapshots-table",
        (*T_WITH_SNAPSHOTS, "SELECT snapshot_id, commit_kind FROM `T$snapshots`"),
        rows=[(1, "APPEND"), (2, "APPEND"), (3, "APPEND")],
    ),
    Example(
        "tags-table",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.create_tag(table => 'default.T', tag => 'my_tag', snapshot => 2)",
            "SELECT tag_name, snapshot_id FROM paimon.default.`T$tags`",
        ),
        rows=[("my_tag", 2)],
    ),
    Example(
        "options-table",
        (
            "CREATE TABLE T (id INT) TBLPROPERTIES ('bucket' = '2', 'bucket-key' = 'id')",
            "SELECT key, value FROM `T$options`",
        ),
        rows=[("bucket", "2"), ("bucket-key", "id")],
    ),
    Example(
        "schemas-table",
        (SIMPLE, "ALTER TABLE my_table ADD COLUMN c INT", "SELECT schema_id FROM `my_table$schemas`"),
        rows=[(0,), (1,)],
    ),
]

PROCEDURES = [
    Example(
        "compact",
        (
            "CREATE TABLE T (id INT, p INT) PARTITIONED BY (p)",
            "INSERT INTO T VALUES (1, 0)",
            "INSERT INTO T VALUES (2, 0)",
            "INSERT INTO T VALUES (3, 1)",
            "CALL sys.compact(table => 'T', partitions => 'p=0;p=1', order_strategy => 'zorder', "
            "order_by => 'id')",
            "SELECT commit_kind FROM `T$snapshots` ORDER BY snapshot_id DESC LIMIT 1",
        ),
        rows=[("COMPACT",)],
    ),
    Example(
        "compact-where",
        (
            "CREATE TABLE T (id INT, p INT) PARTITIONED BY (p)",
            "INSERT INTO T VALUES (1, 1)",
            "INSERT INTO T VALUES (2, 1)",
            "CALL sys.compact(table => 'T', where => 'p>0 and p<3')",
        ),
        rows=[(True,)],
    ),
    Example(
        "compact-database",
        (
            "CREATE DATABASE db1",
            "CREATE TABLE db1.t (id INT) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')",
            "INSERT INTO db1.t VALUES (1)",
            "INSERT INTO db1.t VALUES (2)",
            "CALL sys.compact_database(including_databases => 'db1|db2')",
            "SELECT count(*) FROM db1.`t$snapshots` WHERE commit_kind = 'COMPACT'",
        ),
        rows=[(1,)],
    ),
    Example(
        "create-tag",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.create_tag(table => 'default.T', tag => 'my_tag', snapshot => 2, time_retained => '1 d')",
            "CALL sys.create_tag(table => 'default.T', tag => 'latest')",
        ),
        rows=[(True,)],
        check=_check_tags({"my_tag": 2, "latest": 3}),
    ),
    Example(
        "create-tag-flink-names",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.create_tag(`table` => 'default.T', tag => 'my_tag', snapshot_id => cast(1 as bigint))",
        ),
        check=_check_tags({"my_tag": 1}),
    ),
    Example(
        "create-tag-positional",
        (*T_WITH_SNAPSHOTS, "CALL paimon.sys.create_tag('default.T', 'my_tag', 2)"),
        check=_check_tags({"my_tag": 2}),
    ),
    Example(
        "delete-tag",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.create_tag(table => 'default.T', tag => 'my_tag')",
            "CALL sys.delete_tag(table => 'default.T', tag => 'my_tag')",
        ),
        rows=[(True,)],
        check=_check_tags({}),
    ),
    _rollback(
        "rollback-version-tag",
        "CALL sys.create_tag(table => 'default.T', tag => 'my_tag', snapshot => 1)",
        "CALL sys.rollback(table => 'default.T', version => 'my_tag')",
        to=1,
    ),
    Example(
        "rollback-version-id",
        (*T_WITH_SNAPSHOTS, "CALL sys.rollback(table => 'default.T', version => 2)", "SELECT * FROM T"),
        rows=[(1, "a"), (2, "b")],
    ),
    _rollback("rollback-snapshot", "CALL sys.rollback(table => 'default.T', snapshot => 2)", to=2),
    _rollback(
        "rollback-tag",
        "CALL sys.create_tag(table => 'default.T', tag => 'tag1', snapshot => 1)",
        "CALL sys.rollback(table => 'default.T', tag => 'tag1')",
        to=1,
    ),
    Example(
        "rollback-to-flink",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.rollback_to(`table` => 'default.T', snapshot_id => 1)",
            "SELECT * FROM T",
        ),
        rows=[(1, "a")],
    ),
    Example(
        "expire-snapshots",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.expire_snapshots(table => 'default.T', retain_max => 2, retain_min => 1, "
            "options => 'snapshot.expire.limit=1')",
        ),
        rows=[(1,)],
    ),
    Example(
        "remove-orphan-files",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.remove_orphan_files(table => 'default.T', older_than => "
            "'2023-10-31 12:00:00', dry_run => true)",
        ),
        rows=[(0, 0)],
    ),
    Example(
        "remove-orphan-files-database",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.remove_orphan_files(table => 'default.*', older_than => '2023-10-31 12:00:00')",
        ),
        rows=[(0, 0)],
    ),
    Example(
        "reset-consumer",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.reset_consumer(table => 'default.T', consumerId => 'myid', nextSnapshotId => 2)",
        ),
        rows=[(True,)],
        check=_check_consumers({"myid": 2}),
    ),
    Example(
        "reset-consumer-delete",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.reset_consumer(table => 'default.T', consumer_id => 'myid', "
            "next_snapshot_id => cast(2 as bigint))",
            "CALL sys.reset_consumer(table => 'default.T', consumerId => 'myid')",
        ),
        check=_check_consumers({}),
    ),
    Example(
        "clear-consumers",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.reset_consumer(table => 'default.T', consumerId => 'job1', nextSnapshotId => 2)",
            "CALL sys.reset_consumer(table => 'default.T', consumerId => 'job2', nextSnapshotId => 2)",
            "CALL sys.reset_consumer(table => 'default.T', consumerId => 'other', nextSnapshotId => 2)",
            "CALL sys.clear_consumers(table => 'default.T', includingConsumers => 'job.*', "
            "excludingConsumers => 'job2')",
        ),
        rows=[(True,)],
        check=_check_consumers({"job2": 2, "other": 2}),
    ),
    Example(
        "clear-consumers-all",
        (
            *T_WITH_SNAPSHOTS,
            "CALL sys.reset_consumer(table => 'default.T', consumer_id => 'job1', next_snapshot_id => 2)",
            "CALL sys.clear_consumers(table => 'default.T')",
        ),
        check=_check_consumers({}),
    ),
    Example(
        "merge-into-flink",
        (
            *TARGET,
            "CALL sys.merge_into(target_table => 'default.target', source_table => 'source', "
            "merge_condition => 'target.a = source.a', matched_upsert_setting => 'b = source.b', "
            "not_matched_insert_values => '*')",
            "SELECT * FROM target",
        ),
        rows=[(1, 10, "c1"), (5, 50, "c5"), (7, 70, "c7"), (9, 90, "c99")],
    ),
]


@contextlib.contextmanager
def _paimon_session(spark: Any, warehouse: str) -> Iterator[Callable[[str], Any]]:
    """``run(text)`` runs a statement with the catalog ``paimon`` over ``warehouse``, as current one.

    Temporary views other tests left in the shared session are dropped first: an unqualified name resolves to
    a temporary view before a catalog table, as Spark defines (test_merge_into's view ``S`` would hide ``s``).
    """
    for view in spark.catalog.listTables():
        if view.isTemporary:
            spark.catalog.dropTempView(view.name)
    spark.conf.set(CATALOG_CONF, warehouse)
    state = state_of(spark)
    try:
        paimon_spark.sql(spark, "USE paimon.default")
        yield lambda text: paimon_spark.sql(spark, text)
    finally:
        state.catalog, state.database = None, "default"
        spark.conf.unset(CATALOG_CONF)


@pytest.fixture(scope="module")
def t_with_snapshots(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse after the statements of ``T_WITH_SNAPSHOTS``."""
    warehouse = tmp_path_factory.mktemp("t-with-snapshots")
    with _paimon_session(spark, str(warehouse)) as run:
        for statement in T_WITH_SNAPSHOTS:
            run(statement)
    return warehouse


@pytest.fixture
def paimon_sql(spark: Any, warehouse: str) -> Iterator[Callable[[str], Any]]:
    """``paimon_sql(text)`` runs a statement with the catalog ``paimon`` over ``warehouse``, as current one."""
    with _paimon_session(spark, warehouse) as run:
        yield run


EXAMPLES = {"ddl": DDL, "alter": ALTER, "write": WRITE, "query": QUERY, "procedure": PROCEDURES}


@pytest.mark.parametrize(
    "example",
    [e for examples in EXAMPLES.values() for e in examples],
    ids=[f"{page}-{e.id}" for page, examples in EXAMPLES.items() for e in examples],
)
def test_docs_example(
    t_with_snapshots: Path, paimon_sql: Callable[[str], Any], warehouse: str, example: Example
) -> None:
    statements = example.statements
    if statements[: len(T_WITH_SNAPSHOTS)] == T_WITH_SNAPSHOTS:
        shutil.copytree(t_with_snapshots, warehouse, dirs_exist_ok=True)
        statements = statements[len(T_WITH_SNAPSHOTS) :]
    result = None
    for statement in statements:
        result = paimon_sql(statement)
    if example.rows is not None:
        assert result is not None
        assert sorted((tuple(r) for r in result.collect()), key=repr) == sorted(example.rows, key=repr)
    if example.check is not None:
        example.check(Catalog.open(warehouse))


def test_the_tag_and_rollback_procedures_by_time_and_name(
    t_with_snapshots: Path, paimon_sql: Callable[[str], Any], warehouse: str
) -> None:
    shutil.copytree(t_with_snapshots, warehouse, dirs_exist_ok=True)
    table = _table(Catalog.open(warehouse), "default.T")
    times = [s.time_millis for s in table.snapshots()]
    (tagged,) = paimon_sql(
        f"CALL sys.create_tag_from_timestamp(table => 'default.T', tag => 'second', timestamp => {times[1]})"
    ).collect()
    assert tuple(tagged) == ("second", 2, times[1], None)
    assert [tuple(r) for r in paimon_sql("CALL sys.rename_tag('default.T', 'second', 'two')").collect()] == [
        (True,)
    ]
    _check_tags({"two": 2})(Catalog.open(warehouse))
    rolled = paimon_sql(f"CALL sys.rollback_to_timestamp(table => 'default.T', timestamp => {times[0]})")
    assert [tuple(r) for r in rolled.collect()] == [(3, 1)]
    _check_latest(1)(Catalog.open(warehouse))
    assert [tuple(r) for r in paimon_sql("SELECT * FROM T").collect()] == [(1, "a")]


def test_describe_extended_adds_the_table_details(paimon_sql: Callable[[str], Any], warehouse: str) -> None:
    paimon_sql(
        "CREATE TABLE t (id INT, pt STRING) PARTITIONED BY (pt) COMMENT 'orders' "
        "TBLPROPERTIES ('primary-key' = 'id,pt', 'bucket' = '2')"
    )
    plain = [tuple(r) for r in paimon_sql("DESCRIBE t").collect()]
    extended = [tuple(r) for r in paimon_sql("DESCRIBE EXTENDED t").collect()]
    assert extended[: len(plain)] == plain
    details = {r[0]: r[1] for r in extended[len(plain) :]}
    assert details["Catalog"] == "paimon" and details["Database"] == "default" and details["Table"] == "t"
    assert details["Primary Key"] == "id,pt" and details["Comment"] == "orders"
    assert details["Location"] == Catalog.open(warehouse).get_table("default.t").path
    assert "bucket=2" in details["Table Properties"]


def test_describe_and_show_create_hide_secret_options(paimon_sql: Callable[[str], Any]) -> None:
    secret = "Zq9-spark-s3cr3t"
    paimon_sql(
        "CREATE TABLE s (id INT) TBLPROPERTIES ("
        f"'jdbc.password' = '{secret}', 'lock.jdbc.uri' = 'jdbc:postgresql://paimon:{secret}@db:5432/locks')"
    )
    shown = {
        statement: str([tuple(r) for r in paimon_sql(statement).collect()])
        for statement in ("DESCRIBE EXTENDED s", "SHOW CREATE TABLE s", "SELECT * FROM `s$options`")
    }
    assert {statement: secret in text for statement, text in shown.items()} == dict.fromkeys(shown, False)
    assert all("***" in text for text in shown.values())


def test_catalog_wide_system_tables_and_binlog_in_sql(
    paimon_sql: Callable[[str], Any], warehouse: str
) -> None:
    paimon_sql("CREATE TABLE kv (k INT, v STRING) TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '1')")
    paimon_sql("INSERT INTO kv VALUES (1, 'a'), (2, 'b')")
    catalog = Catalog.open(warehouse)
    for name in ("sys.all_table_options", "sys.catalog_options"):
        python = [tuple(r.values()) for r in catalog.get_table(name).to_arrow().to_pylist()]
        rows = [tuple(r) for r in paimon_sql(f"SELECT * FROM paimon.{name}").collect()]
        assert sorted(rows) == sorted(python) and rows, name
    assert ("default", "kv", "bucket", "1") in [
        tuple(r) for r in paimon_sql("SELECT * FROM paimon.sys.all_table_options").collect()
    ]
    binlog = paimon_sql("SELECT rowkind, k, v FROM `kv$binlog`").collect()
    assert sorted(tuple(r) for r in binlog) == [("+I", [1], ["a"]), ("+I", [2], ["b"])]
