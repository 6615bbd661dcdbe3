"""Data-file indexes as Java Paimon writes them: bloom filters and bitmaps per column of a data file.

* :func:`encode_file_index` / :func:`decode_file_index`: the container (``FileIndexFormat``);
* :class:`FileIndexBuilder` (from :func:`index_builder`): the indexes of a file being written;
* :class:`FileIndexes`: whether a file's indexes let a filter match (planning skips the files they rule out).

Only bytes and their meaning live here; where the bytes go (manifest or ``.index`` file) belongs to the table.
"""

from paimon_core.fileindex._bloom import BloomFilter, xxhash64
from paimon_core.fileindex._evaluate import BITMAP, BLOOM_FILTER, FileIndexes
from paimon_core.fileindex._format import decode_file_index, encode_file_index
from paimon_core.fileindex._writer import (
    INDEX_FILE_SUFFIX,
    FileIndexBuilder,
    FileIndexSpec,
    file_index_specs,
    index_builder,
)

__all__ = [
    "BITMAP",
    "BLOOM_FILTER",
    "INDEX_FILE_SUFFIX",
    "BloomFilter",
    "FileIndexBuilder",
    "FileIndexSpec",
    "FileIndexes",
    "decode_file_index",
    "encode_file_index",
    "file_index_specs",
    "index_builder",
    "xxhash64",
]
