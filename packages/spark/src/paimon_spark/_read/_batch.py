"""Batch reads of the ``paimon`` data source: one Spark partition per split of one snapshot, Arrow only.

The readers' ``partitions`` run on the driver, ``read`` on executors; each side re-opens the table from the
pickled :class:`~paimon_spark.SourceConfig`. Changelog reads (``$audit_log``, ``read.changelog``) put a
``rowkind`` column first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, StringType, StructField, StructType

from paimon_core.errors import ConfigError
from paimon_core.table import (
    AuditLogTable,
    BinlogTable,
    DataSplit,
    DataView,
    GlobalSystemTable,
    SystemTable,
    Table,
    TableRead,
    plan_batch,
)
from paimon_spark._options import ROW_KIND_COLUMN, SourceConfig
from paimon_spark._read._filters import Term, to_terms
from paimon_spark._types import to_spark_schema, to_spark_type

__all__ = [
    "PaimonBatchReader",
    "PaimonPartition",
    "PaimonPushdownReader",
    "bucket_partitions",
    "changelog_view",
    "data_table",
    "read_partition",
    "spark_schema",
    "split_partitions",
]


class PaimonPartition(InputPartition):
    """Splits read by one Spark task, with the filter terms to apply to their rows."""

    def __init__(self, index: int, splits: Sequence[DataSplit], terms: Sequence[Term]) -> None:
        super().__init__(index)
        self.splits = tuple(splits)
        self.terms = list(terms)


def split_partitions(splits: Sequence[DataSplit], terms: Sequence[Term]) -> list[PaimonPartition]:
    return [PaimonPartition(i, (split,), terms) for i, split in enumerate(splits)]


def bucket_partitions(splits: Sequence[DataSplit]) -> list[PaimonPartition]:
    """A primary-key table's changes: every split of one bucket in one Spark partition, in commit order, so
    that the changes of a key in one micro-batch reach one task in the order they were made (a sink or a
    shuffle keeps the order of the rows of one task; rows of different tasks have none)."""
    groups: dict[tuple[bytes, int], list[DataSplit]] = {}
    for split in splits:  # planned snapshot by snapshot
        groups.setdefault((split.partition, split.bucket), []).append(split)
    return [PaimonPartition(i, group, ()) for i, group in enumerate(groups.values())]


def changelog_view(config: SourceConfig, table: Table) -> AuditLogTable | None:
    """The view a read returns rows of with their row kinds: ``$audit_log``, or a table read with
    ``read.changelog``; None for other reads."""
    if isinstance(table, AuditLogTable):
        return table
    if config.read_changelog and isinstance(table, Table):
        return AuditLogTable(table)
    return None


def data_table(config: SourceConfig, table: Table) -> Table:
    """The table whose snapshots a read plans: a view's data table, or the table itself."""
    if isinstance(table, DataView):
        if not isinstance(table, AuditLogTable):
            raise ConfigError(f"{table.identifier} is read whole by one task; it has no splits to plan")
        return table.data
    return table


def spark_schema(config: SourceConfig, table: Table) -> StructType:
    changelog = changelog_view(config, table)
    if changelog is not None:
        kind = StructField(ROW_KIND_COLUMN, StringType(), nullable=False)
        if isinstance(changelog, BinlogTable):  # each column an array of its values (Java's nullable arrays)
            fields = changelog.data.schema.fields
            arrays = [StructField(f.name, ArrayType(to_spark_type(f.type), True), True) for f in fields]
            return StructType([kind, *arrays])
        return StructType([kind, *to_spark_schema(changelog.data.schema.fields).fields])
    if isinstance(table, DataView):
        return to_spark_schema(table.data.schema.fields)
    return to_spark_schema(table.schema.fields)


def _new_read(config: SourceConfig, columns: list[str], terms: Sequence[Term]) -> TableRead:
    table = config.open_table()
    changelog = changelog_view(config, table)
    if changelog is not None:
        return changelog.new_read(columns)
    return table.new_read(columns=columns, filter=list(terms) or None)


def read_partition(
    config: SourceConfig, schema: StructType, partition: PaimonPartition
) -> Iterator[pa.RecordBatch]:
    if not partition.splits:
        return
    read = _new_read(config, schema.fieldNames(), partition.terms)
    # Spark checks each batch against exactly this schema (nullability included).
    target = to_arrow_schema(schema, timezone="UTC")
    for batch in read.to_batches(partition.splits):
        if batch.num_rows:
            yield batch if batch.schema.equals(target) else batch.cast(target, safe=False)


def _read_whole(table: Table) -> bool:
    """Whether a batch read of ``table`` is one task reading it whole (metadata tables, ``$ro``)."""
    if isinstance(table, DataView):
        return not isinstance(table, AuditLogTable)
    return isinstance(table, (SystemTable, GlobalSystemTable))


class PaimonBatchReader(DataSourceReader):
    """Batch scan of one snapshot (``scan.*`` options resolve which), one Spark partition per split."""

    def __init__(self, config: SourceConfig, schema: StructType) -> None:
        self.config = config
        self.schema = schema
        self.terms: list[Term] = []

    def partitions(self) -> Sequence[InputPartition]:
        table = self.config.open_table()
        if _read_whole(table):
            return [PaimonPartition(0, (), ())]  # metadata: read whole by one task
        splits = plan_batch(data_table(self.config, table), self.terms or None)
        return split_partitions(splits, self.terms) or [PaimonPartition(0, (), ())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PaimonPartition)
        table = self.config.open_table()
        if _read_whole(table):
            target = to_arrow_schema(self.schema, timezone="UTC")
            for batch in table.to_batches(columns=self.schema.fieldNames()):
                yield batch.cast(target, safe=False)
            return
        yield from read_partition(self.config, self.schema, partition)


class PaimonPushdownReader(PaimonBatchReader):
    """The batch reader with ``pushFilters`` (only usable when Spark's filter pushdown flag is on)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        table = self.config.open_table()
        if isinstance(table, DataView) or changelog_view(self.config, table) is not None:
            yield from filters  # views and changelog reads filter in Spark
            return
        accepted, rejected = to_terms(filters, table.schema.fields)
        self.terms = accepted
        yield from rejected
