"""The ``paimon`` Python data source: batch and streaming reads (:mod:`._read`) and writes (:mod:`._write`).

Spark runs every method in a different Python process: the data source and the readers' ``partitions`` on
the driver side, ``read``/``write`` on executors, the writers' ``commit``/``abort`` on the driver again.
Nothing is shared but what is pickled: each side re-opens the table from a :class:`SourceConfig`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from paimon_spark._options import SOURCE_NAME, SourceConfig
from paimon_spark._read import PaimonBatchReader, PaimonPushdownReader, PaimonStreamReader, spark_schema
from paimon_spark._write import PaimonBatchWriter, PaimonStreamWriter

__all__ = ["SOURCE_NAME", "PaimonDataSource"]


class PaimonDataSource(DataSource):
    """``spark.read.format("paimon")`` and friends; register with :func:`paimon_spark.register`.

    ``register`` makes a subclass carrying the session's ``paimon.*`` conf and the filter pushdown flag,
    because the data source runs in Python workers that cannot see the session.
    """

    session_conf: ClassVar[dict[str, str]] = {}
    filter_pushdown: ClassVar[bool] = False

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.config = SourceConfig.parse(dict(options), self.session_conf)

    def schema(self) -> StructType:
        return spark_schema(self.config, self.config.open_table())

    def reader(self, schema: StructType) -> DataSourceReader:
        cls = PaimonPushdownReader if self.filter_pushdown else PaimonBatchReader
        return cls(self.config, schema)

    def writer(self, schema: StructType, overwrite: bool) -> PaimonBatchWriter:
        return PaimonBatchWriter(self.config, schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return PaimonStreamReader(self.config, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> PaimonStreamWriter:
        return PaimonStreamWriter(self.config, schema, overwrite)
