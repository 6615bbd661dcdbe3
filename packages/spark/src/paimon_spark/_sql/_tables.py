"""Spark's own table calls on Paimon names, after :func:`paimon_spark.register`.

Spark resolves ``spark.table("paimon.db.t")``, ``df.write.insertInto(...)``, ``saveAsTable`` and
``df.writeTo(...)`` in its JVM catalogs, which know nothing of a Python data source: they fail with
``REQUIRES_SINGLE_PART_NAMESPACE`` or "Couldn't find a catalog". Registering wraps these methods (once per
process, on the classic and the Spark Connect classes): a name of a Paimon catalog of a registered session
goes to Paimon's Spark SQL, anything else to Spark unchanged.

- ``spark.table(name)`` and ``spark.read.table(name)``: ``SELECT * FROM name``.
- ``df.write.insertInto(name[, overwrite])``: ``INSERT INTO | OVERWRITE name`` (columns by position, as
  Spark's insertInto; ``.mode("overwrite")`` overwrites as Spark's does).
- ``df.write.saveAsTable(name)`` and ``df.writeTo(name)``: refused, naming the Paimon ways. They create or
  replace the table from the DataFrame, and Spark gives a Python data source no say in that.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from paimon_spark._errors import paimon_errors
from paimon_spark._sql._errors import SqlError
from paimon_spark._sql._names import PaimonName, Resolver, session_catalogs, state_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["install_table_calls"]

_MARK = "__paimon_table_call__"
_MODE = "_paimon_save_mode"


def paimon_name(spark: Any, name: str) -> PaimonName | None:
    """The Paimon table ``name`` means in a session :func:`paimon_spark.register` ran on, else None."""
    if spark is None or not isinstance(name, str) or not state_of(spark).registered:
        return None
    try:
        parts = [p.name for p in exp.to_table(name, dialect="spark").parts]
    except (ParseError, TokenError, sqlglot.errors.SqlglotError):
        return None  # Spark names the malformed name itself
    catalogs = session_catalogs({str(k): str(v) for k, v in spark.conf.getAll.items()})
    if not catalogs and state_of(spark).catalog is None and not state_of(spark).views:
        return None
    return Resolver(state_of(spark), catalogs, spark_view=lambda n: _spark_has(spark, n)).table(parts)


def _spark_has(spark: Any, name: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception:  # a name Spark cannot parse is not Spark's
        return False


def _quoted(name: PaimonName) -> str:
    if name.catalog is None:
        return f"`{name.table}`"
    return ".".join(f"`{p}`" for p in (name.catalog.name, name.database, name.table))


def _select(spark: Any, name: PaimonName) -> DataFrame:
    from paimon_spark._sql import sql

    return sql(spark, f"SELECT * FROM {_quoted(name)}")


def _insert(df: Any, name: PaimonName, overwrite: bool) -> None:
    from paimon_spark._sql import sql

    view = f"paimon_insert_{uuid.uuid4().hex}"
    df.createOrReplaceTempView(view)
    try:
        verb = "OVERWRITE" if overwrite else "INTO"
        sql(df.sparkSession, f"INSERT {verb} {_quoted(name)} SELECT * FROM `{view}`")
    finally:
        df.sparkSession.catalog.dropTempView(view)


def _refused(call: str, name: PaimonName) -> SqlError:
    table = name.display
    return SqlError(
        f"{call} on the Paimon table {table} is not served: Spark creates or replaces such a table in its own "
        f"catalog, which knows nothing of Paimon's. Append with df.write.insertInto({table!r}) or "
        f"spark.sql('INSERT INTO {table} SELECT ...'), create with spark.sql('CREATE TABLE {table} ... AS "
        f"SELECT ...'), or write with df.write.format('paimon').options(...).save('{name.identifier}') or "
        "paimon_spark.write (docs/spark/spark-sql.md, 'Spark's table calls')"
    )


def _wrap(cls: type, method: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    original = getattr(cls, method, None)
    if original is None or getattr(original, _MARK, False):
        return
    wrapped = functools.wraps(original)(make(original))
    setattr(wrapped, _MARK, True)
    setattr(cls, method, wrapped)


def _session_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def table(self: Any, tableName: str) -> Any:
        name = paimon_name(self, tableName)
        return original(self, tableName) if name is None else _select(self, name)

    return paimon_errors()(table)


def _reader_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def table(self: Any, tableName: str) -> Any:
        spark = getattr(self, "_spark", None) or getattr(self, "_client", None)
        name = paimon_name(spark, tableName)
        return original(self, tableName) if name is None else _select(spark, name)

    return paimon_errors()(table)


def _writer_mode(original: Callable[..., Any]) -> Callable[..., Any]:
    def mode(self: Any, saveMode: str | None) -> Any:
        setattr(self, _MODE, saveMode)
        return original(self, saveMode)

    return mode


def _writer_insert_into(original: Callable[..., Any]) -> Callable[..., Any]:
    def insertInto(self: Any, tableName: str, overwrite: bool | None = None) -> None:
        name = paimon_name(self._spark, tableName)
        if name is None:
            return original(self, tableName, overwrite)  # type: ignore[no-any-return]
        if overwrite is None:
            overwrite = str(getattr(self, _MODE, None) or "").lower() == "overwrite"
        _insert(_frame_of(self), name, overwrite)
        return None

    return paimon_errors()(insertInto)


def _frame_of(writer: Any) -> Any:
    """The DataFrame a writer writes: classic writers keep it, Connect's keep its plan."""
    if hasattr(writer._df, "sparkSession"):
        return writer._df
    from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

    return ConnectFrame(writer._df, writer._spark)


def _writer_save_as_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def saveAsTable(self: Any, name: str, *args: Any, **kwargs: Any) -> None:
        found = paimon_name(self._spark, name)
        if found is not None:
            raise _refused(f"saveAsTable({name!r})", found)
        return original(self, name, *args, **kwargs)  # type: ignore[no-any-return]

    return saveAsTable


def _frame_write_to(original: Callable[..., Any]) -> Callable[..., Any]:
    def writeTo(self: Any, table: str) -> Any:
        found = paimon_name(self.sparkSession, table)
        if found is not None:
            raise _refused(f"writeTo({table!r})", found)
        return original(self, table)

    return writeTo


def _classes() -> list[tuple[type, type, type, type]]:
    """(session, reader, writer, DataFrame) classes: classic, and Spark Connect's when it imports."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.session import SparkSession as ClassicSession

    found: list[tuple[type, type, type, type]] = [
        (ClassicSession, DataFrameReader, DataFrameWriter, ClassicFrame)
    ]
    try:
        from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame
        from pyspark.sql.connect.readwriter import DataFrameReader as ConnectReader
        from pyspark.sql.connect.readwriter import DataFrameWriter as ConnectWriter
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # no pyspark[connect]: no Connect sessions either
        return found
    found.append((ConnectSession, ConnectReader, ConnectWriter, ConnectFrame))
    return found


def install_table_calls(spark: SparkSession) -> None:
    """Serve or refuse Spark's table calls on Paimon names (see the module docstring); once per process,
    and only for sessions ``register`` ran on."""
    del spark  # the wrappers look the session up on each call
    for session, reader, writer, frame in _classes():
        _wrap(session, "table", _session_table)
        _wrap(reader, "table", _reader_table)
        _wrap(writer, "mode", _writer_mode)
        _wrap(writer, "insertInto", _writer_insert_into)
        _wrap(writer, "saveAsTable", _writer_save_as_table)
        _wrap(frame, "writeTo", _frame_write_to)
