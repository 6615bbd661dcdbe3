"""``scan.fallback-branch``: a batch read takes the partitions its branch does not have from another branch
(Java's ``FallbackReadFileStoreTable``).

The fallback branch must have the same columns (names and types, nullability aside), as Java checks. Its
splits carry the branch's name (:attr:`DataSplit.branch`) and are read with the branch's own schemas and
options. Only a read of the latest snapshot falls back: time travel, incremental reads and streams name
snapshots of one branch, and read that branch alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.branch import branch_path
from paimon_core.errors import ConfigError
from paimon_core.schema import SchemaManager
from paimon_core.table._data_split import DataSplit
from paimon_core.table._time_travel import NOW, TimeTravel

if TYPE_CHECKING:
    from paimon_core.table._read import TableRead
    from paimon_core.table._store import TableStore

__all__ = ["FallbackRead", "fallback_store", "falls_back"]

# the options that pin a read to snapshots of one branch
_PINNED: tuple[opts.Option[Any], ...] = (
    opts.SCAN_SNAPSHOT_ID,
    opts.SCAN_TAG_NAME,
    opts.SCAN_TIMESTAMP_MILLIS,
    opts.SCAN_TIMESTAMP,
    opts.INCREMENTAL_BETWEEN,
    opts.INCREMENTAL_BETWEEN_TIMESTAMP,
)


def _fallback_name(table: TableStore) -> str | None:
    name = table.options.get_option(opts.SCAN_FALLBACK_BRANCH)
    return name if name and name.strip() and name != table.branch else None


def falls_back(table: TableStore, travel: TimeTravel) -> bool:
    """Whether a batch read of ``table`` with ``travel`` takes missing partitions from a fallback branch."""
    if _fallback_name(table) is None or travel != NOW:
        return False
    return all(table.options.get_option(o) is None for o in _PINNED)


def fallback_store(table: TableStore) -> TableStore | None:
    """The fallback branch of ``table`` as a store of the same type (None: none is set, or it does not exist,
    which Java logs and reads without).

    Raises:
        ConfigError: the fallback branch has other columns than the table.
    """
    name = _fallback_name(table)
    if name is None:
        return None
    schema = SchemaManager(table.storage, branch_path(table.path, name)).latest()
    if schema is None:
        return None
    mine = [(f.name, str(f.type).removesuffix(" NOT NULL")) for f in table.schema.fields]
    theirs = [(f.name, str(f.type).removesuffix(" NOT NULL")) for f in schema.fields]
    if mine != theirs:
        raise ConfigError(
            f"{table.identifier}: branch {table.branch!r} and its '{opts.SCAN_FALLBACK_BRANCH.key}' {name!r} "
            f"must have the same columns; {table.branch}: {mine}, {name}: {theirs}",
            opts.SCAN_FALLBACK_BRANCH.key,
        )
    # the branch's own options, with this handle's dynamic ones that are not about branches
    dynamic = {
        k: v
        for k, v in table.options.items()
        if table.schema.options.get(k) != v and k not in (opts.BRANCH.key, opts.SCAN_FALLBACK_BRANCH.key)
    }
    dynamic[opts.BRANCH.key] = name
    return type(table)(table.path, table.storage, schema, table.identifier, dynamic, table.hooks)


class FallbackRead:
    """Reads the splits of a read that fell back: each with the reader of its branch."""

    def __init__(self, main: TableRead, fallback: Callable[[], TableRead]) -> None:
        self._main = main
        self._make_fallback = fallback
        self._fallback: TableRead | None = None

    def _read_of(self, split: DataSplit) -> TableRead:
        if split.branch is None:
            return self._main
        if self._fallback is None:
            self._fallback = self._make_fallback()
        return self._fallback

    def to_batches(self, splits: Sequence[DataSplit]) -> Iterator[pa.RecordBatch]:
        schema = self._main.output_schema
        for split in splits:
            for batch in self._read_of(split).to_batches([split]):
                yield batch if split.branch is None else batch.cast(schema)

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table:
        mine = [s for s in splits if s.branch is None]
        others = [s for s in splits if s.branch is not None]
        data = self._main.to_arrow(mine)
        if not others:
            return data
        return pa.concat_tables([data, self._read_of(others[0]).to_arrow(others).cast(data.schema)])

    def to_reader(self, splits: Sequence[DataSplit]) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self._main.output_schema, self.to_batches(splits))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._main, name)
