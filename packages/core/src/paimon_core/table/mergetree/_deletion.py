"""The deletion vectors of one bucket while its merge tree compacts (Java's ``BucketedDvMaintainer``).

See docs/primary-key-tables.md ("Deletion vectors"). A lookup compaction that finds an older row of a key
on a level above its output marks that row's position deleted instead of rewriting its file; files a
compaction rewrites lose their vectors. The bucket's reads during compaction see the vectors as they are
now, and a commit that changed any replaces the bucket's index file with a new one holding them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy.typing as npt

from paimon_core import options as opts
from paimon_core.deletionvectors import DeletionVector, read_deletion_vectors, write_deletion_vectors
from paimon_core.manifest import IndexFileMeta, ManifestNamer
from paimon_core.table._data_split import DataSplit
from paimon_core.table._read import DeletionVectorCache

if TYPE_CHECKING:
    from paimon_core.table._store import TableStore

__all__ = ["BucketDeletionVectors"]


class BucketDeletionVectors(DeletionVectorCache):
    """Live deletion vectors of one (partition, bucket), restored from its index files.

    Args:
        table: the table.
        index_files: the bucket's deletion-vector index files in the snapshot the writer restored from.
    """

    def __init__(self, table: TableStore, index_files: Sequence[IndexFileMeta]) -> None:
        super().__init__(table)
        self.index_files = tuple(index_files)
        self.live: dict[str, DeletionVector] = {}
        for meta in index_files:
            self.live.update(read_deletion_vectors(table, meta))
        self.bitmap64 = table.options.get_option(opts.DELETION_VECTORS_BITMAP64)
        self.modified = False
        self._namer = ManifestNamer()  # index-<uuid>-<n>: one UUID per writer

    def vectors(self, split: DataSplit) -> dict[str, DeletionVector]:
        return self.live  # whatever the split says: the bucket as this writer sees it now

    def delete_rows(self, file_name: str, positions: npt.ArrayLike) -> None:
        """Mark rows of a data file deleted (Java's ``notifyNewDeletion``)."""
        vector = self.live.get(file_name)
        if vector is None:
            vector = self.live[file_name] = DeletionVector(bitmap64=self.bitmap64)
        before = vector.cardinality
        vector.add(positions)
        self.modified |= vector.cardinality != before

    def forget(self, file_names: Iterable[str]) -> None:
        """Drop the vectors of rewritten files (Java's ``removeDeletionVectorOf``)."""
        for name in file_names:
            if self.live.pop(name, None) is not None:
                self.modified = True

    def has_deletions(self, file_name: str) -> bool:
        vector = self.live.get(file_name)
        return vector is not None and not vector.is_empty()

    def prepare_commit(self) -> tuple[tuple[IndexFileMeta, ...], tuple[IndexFileMeta, ...]]:
        """When anything changed, a new index file holding every vector: (new files, files they replace)."""
        if not self.modified:
            return (), ()
        meta = write_deletion_vectors(self.table, self.live, self._namer)
        replaced, self.index_files, self.modified = self.index_files, (meta,), False
        return (meta,), replaced
