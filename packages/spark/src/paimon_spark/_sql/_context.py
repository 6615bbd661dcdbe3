"""What a statement handler works with: the session, the statement's text and tokens, the name resolver."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType
from sqlglot.tokenizer_core import Token

from paimon_core.table import Table
from paimon_spark._options import SourceConfig
from paimon_spark._sql._errors import SqlError
from paimon_spark._sql._names import PaimonName, Resolver

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Context"]


@dataclass
class Context:
    """One statement being run.

    Attributes:
        run_sql: Spark's own ``spark.sql`` (never the Paimon-aware one :func:`paimon_spark.register` installs).
        args: the statement's SQL parameters, passed on to Spark with the text.
    """

    spark: SparkSession
    text: str
    tokens: Sequence[Token]
    resolver: Resolver
    run_sql: Callable[..., DataFrame]
    args: Any = None

    def error(self, message: str) -> SqlError:
        return SqlError(f"{message}: {self.text}", self.text)

    def rows(self, schema: str, rows: Sequence[tuple[Any, ...]]) -> DataFrame:
        """A result DataFrame (``schema`` in Spark's DDL) held by the driver, as Spark's own commands give
        theirs: from Arrow, so collecting it runs no Spark job (rows given as a list would be one)."""
        struct = cast(StructType, StructType.fromDDL(schema))
        arrow = to_arrow_schema(struct, timezone="UTC")
        columns = [pa.array([r[i] for r in rows], arrow.field(i).type) for i in range(len(arrow))]
        return self.spark.createDataFrame(pa.Table.from_arrays(columns, schema=arrow))

    def done(self) -> DataFrame:
        """The empty result of a command, as ``spark.sql`` gives it (no Spark job to collect it either)."""
        return self.run_sql("SELECT 1 WHERE false").select()

    def paimon_table(self, parts: Sequence[str]) -> PaimonName:
        """The Paimon table ``parts`` names.

        Raises:
            SqlError: the name is not a Paimon table's (its catalog is Spark's).
        """
        name = self.resolver.table(parts)
        if name is None:
            raise self.error(f"{'.'.join(parts)} is not a table of a Paimon catalog")
        return name

    def open(self, name: PaimonName, **dynamic: str) -> Table:
        """The table itself (not through Spark), with dynamic options.

        Raises:
            TableNotFoundError: it does not exist (naming the tables near it).
        """
        if name.view is not None:
            return SourceConfig.parse({**name.source_options(), **dynamic}).open_table()
        return name.open_catalog().get_table(name.identifier, **dynamic)
