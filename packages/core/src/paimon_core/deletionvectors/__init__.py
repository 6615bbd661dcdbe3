"""Deletion vectors: which rows of a data file are deleted, as Paimon stores them (docs/primary-key-tables.md).

* :class:`DeletionVector`: a data file's deleted positions; framed serialization (32- or 64-bit bitmap);
* :func:`write_deletion_vectors` / :func:`read_deletion_vectors`: a (partition, bucket)'s index file;
  :func:`read_deletion_vector`: one vector by its range;
* :func:`serialize_roaring32` / :func:`deserialize_roaring32` and the 64-bit pair: the bare bitmaps.

Only bytes live here; which rows a compaction deletes, and applying vectors on read, belong to the table.
"""

from paimon_core.deletionvectors._index_file import (
    INDEX_FILE_VERSION,
    IndexFileTable,
    decode_index_file,
    encode_index_file,
    read_deletion_vector,
    read_deletion_vectors,
    write_deletion_vectors,
)
from paimon_core.deletionvectors._roaring32 import deserialize_roaring32, serialize_roaring32
from paimon_core.deletionvectors._roaring64 import MAX_POSITION_64, deserialize_roaring64, serialize_roaring64
from paimon_core.deletionvectors._vector import (
    MAGIC_32,
    MAGIC_64,
    MAX_POSITION_32,
    DeletionVector,
    decode_frame,
)

__all__ = [
    "INDEX_FILE_VERSION",
    "MAGIC_32",
    "MAGIC_64",
    "MAX_POSITION_32",
    "MAX_POSITION_64",
    "DeletionVector",
    "IndexFileTable",
    "decode_frame",
    "decode_index_file",
    "deserialize_roaring32",
    "deserialize_roaring64",
    "encode_index_file",
    "read_deletion_vector",
    "read_deletion_vectors",
    "serialize_roaring32",
    "serialize_roaring64",
    "write_deletion_vectors",
]
