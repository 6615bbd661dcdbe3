"""The SQL front's parts that need no Spark: catalogs from conf, name resolution, time travel options."""

from __future__ import annotations

import datetime as dt

import pytest

from paimon_core.errors import ConfigError
from paimon_spark._options import SourceConfig
from paimon_spark._sql._errors import SqlError
from paimon_spark._sql._names import CatalogConf, Resolver, SqlState, ViewDef, session_catalogs
from paimon_spark._sql._tokens import Cursor

CONF = {
    "spark.sql.catalog.paimon": "org.apache.paimon.spark.SparkCatalog",
    "spark.sql.catalog.paimon.warehouse": "/wh",
    "spark.sql.catalog.paimon.table-default.bucket": "2",
    "spark.sql.catalog.paimon.s3.endpoint": "http://127.0.0.1:9000",
    "spark.sql.catalog.lake.warehouse": "/lake",  # no class: served here too
    "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",  # someone else's catalog
    "spark.sql.catalog.ice.warehouse": "/ice",
    "spark.sql.shuffle.partitions": "2",
}


def test_catalogs_are_the_paimon_and_classless_ones_with_a_warehouse() -> None:
    catalogs = session_catalogs(CONF)
    assert sorted(catalogs) == ["lake", "paimon"]
    paimon = catalogs["paimon"]
    assert (paimon.warehouse, paimon.options, paimon.table_defaults) == (
        "/wh",
        {"s3.endpoint": "http://127.0.0.1:9000"},
        {"bucket": "2"},
    )


def test_a_catalog_of_another_metastore_is_refused() -> None:
    with pytest.raises(ConfigError, match="metastore 'hive'"):
        session_catalogs({"spark.sql.catalog.p.warehouse": "/wh", "spark.sql.catalog.p.metastore": "hive"})
    with pytest.raises(ConfigError, match="metastore 'rest'"):
        session_catalogs({"spark.sql.catalog.p.warehouse": "/wh", "spark.sql.catalog.p.metastore": "rest"})


def test_a_jdbc_catalog_keeps_its_options() -> None:
    prefix = "spark.sql.catalog.p."
    conf = {prefix + "warehouse": "/wh", prefix + "metastore": "jdbc", prefix + "uri": "jdbc:sqlite:/c.db"}
    catalog = session_catalogs({**conf, prefix + "jdbc.user": "u"})["p"]
    assert catalog.options == {"metastore": "jdbc", "uri": "jdbc:sqlite:/c.db", "jdbc.user": "u"}


def _resolver(state: SqlState, *, ctes: tuple[str, ...] = (), spark_views: tuple[str, ...] = ()) -> Resolver:
    catalogs = {"paimon": CatalogConf("paimon", "/wh"), "lake": CatalogConf("lake", "/lake")}
    return Resolver(state, catalogs, ctes=ctes, spark_view=lambda name: name in spark_views)


def test_names_resolve_as_spark_resolves_them() -> None:
    state = SqlState()
    resolver = _resolver(state)
    assert resolver.table(["paimon", "db", "t"]).identifier == "db.t"  # type: ignore[union-attr]
    assert resolver.table(["lake", "t"]).identifier == "default.t"  # type: ignore[union-attr]
    assert resolver.table(["db", "t"]) is None  # Spark's current catalog is Spark's own
    assert resolver.table(["t"]) is None
    assert resolver.table(["spark_catalog", "db", "t"]) is None

    state.catalog, state.database = "paimon", "db"  # after USE paimon.db
    resolver = _resolver(state, ctes=("c",), spark_views=("source",))
    assert resolver.table(["t"]).display == "paimon.db.t"  # type: ignore[union-attr]
    assert resolver.table(["other", "t"]).display == "paimon.other.t"  # type: ignore[union-attr]
    assert resolver.table(["lake", "t"]).display == "lake.default.t"  # type: ignore[union-attr]
    assert resolver.table(["c"]) is None  # a CTE of the statement
    assert resolver.table(["source"]) is None  # a temporary view of Spark's
    assert resolver.table(["paimon", "db", "t$snapshots"]).system == "snapshots"  # type: ignore[union-attr]


def test_a_paimon_view_resolves_to_its_table() -> None:
    state = SqlState(views={"v": ViewDef("db.t", {"warehouse": "/wh"})})
    name = _resolver(state).table(["V"])
    assert name is not None and name.identifier == "db.t"
    assert name.source_options() == {"table": "db.t", "warehouse": "/wh"}


def test_cursor_reads_names_strings_and_groups() -> None:
    cursor = Cursor("PARTITIONS paimon.db.`t x` PARTITION (dt = '2024', hh = (1)) LIKE 'a*'")
    assert cursor.accept("PARTITIONS")
    assert cursor.name() == ["paimon", "db", "t x"]
    assert cursor.accept("PARTITION")
    assert cursor.group() == "dt = '2024', hh = (1)"
    assert cursor.accept("LIKE") and cursor.string() == "a*"
    cursor.expect_end()
    cursor = Cursor("TABLES IN")
    assert cursor.accept("TABLES", "IN")
    with pytest.raises(SqlError, match=r"expected a name at the end in: TABLES IN"):
        cursor.name()


def _travel(**options: str) -> dict[str, str]:
    config = SourceConfig.parse({"path": "/wh/db.db/t", **options}, {"spark.sql.session.timeZone": "UTC"})
    return {k: v for k, v in config.table_options.items() if k.startswith("scan.")}


def test_spark_time_travel_options_become_paimon_scan_options() -> None:
    assert _travel(versionAsOf="3") == {"scan.snapshot-id": "3"}
    assert _travel(timestampAsOf="1700000000") == {"scan.timestamp-millis": "1700000000000"}
    at = dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=dt.timezone.utc)
    assert _travel(timestampAsOf="2024-01-02 03:04:05.123") == {
        "scan.timestamp-millis": str(int(at.timestamp() * 1000))
    }
    # A zone of its own wins over the session's.
    assert _travel(timestampAsOf="2024-01-02T03:04:05+01:00") == {
        "scan.timestamp-millis": str(int(at.timestamp() * 1000) - 123 - 3_600_000)
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"versionAsOf": "1", "timestampAsOf": "1"}, "choose one of the options"),
        ({"versionAsOf": "1", "scan.snapshot-id": "1"}, "choose one of the options"),
        ({"timestampAsOf": "yesterday"}, "timestampAsOf 'yesterday'"),
        ({"versionAsOff": "1"}, "unknown option 'versionasoff'"),
    ],
)
def test_bad_time_travel_options_fail(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _travel(**options)
