"""Manifests and manifest lists: the Avro metadata that lists a snapshot's data files (docs/format.md#manifest-entries, docs/manifests.md).

* :mod:`._entry`: the records (:class:`ManifestEntry`, :class:`DataFileMeta`, :class:`ManifestFileMeta`,
  :class:`SimpleStats`) and the entry merge;
* :mod:`._avro`: the Avro schemas, record conversion and codecs;
* :mod:`._files`: reading and writing files with exact sizes, the rolling writer;
* :mod:`._raw`: manifests as Avro blocks and encoded records (moving entries without decoding them);
* :mod:`._merge`: the manifest merge that keeps base manifest lists short and partition ranges narrow;
* :mod:`._index`: index manifests (the snapshot's list of index files).
"""

from paimon_core.manifest._avro import (
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    avro_codec,
)
from paimon_core.manifest._cache import manifest_cache
from paimon_core.manifest._entry import (
    EMPTY_ROW_BYTES,
    DataFileMeta,
    DuplicateFileError,
    FileIdentifier,
    FileKind,
    FileSource,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    local_wall_clock_millis,
    merge_entries,
    wall_clock_to_epoch_millis,
)
from paimon_core.manifest._files import (
    ManifestContext,
    ManifestNamer,
    RollingManifestWriter,
    compute_partition_stats,
    read_all_entries,
    read_manifest_file,
    read_manifest_list,
    read_manifest_where,
    write_manifest_file,
    write_manifest_list,
    write_manifests,
)
from paimon_core.manifest._index import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    DeletionVectorRange,
    IndexFileMeta,
    IndexManifestEntry,
    combine_index_entries,
    read_index_manifest,
    write_index_manifest,
)
from paimon_core.manifest._merge import merge_manifests

__all__ = [
    "DELETION_VECTORS_INDEX",
    "EMPTY_ROW_BYTES",
    "HASH_INDEX",
    "MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_FILE_META_SCHEMA",
    "DataFileMeta",
    "DeletionVectorRange",
    "DuplicateFileError",
    "FileIdentifier",
    "FileKind",
    "FileSource",
    "IndexFileMeta",
    "IndexManifestEntry",
    "ManifestContext",
    "ManifestEntry",
    "ManifestFileMeta",
    "ManifestNamer",
    "RollingManifestWriter",
    "SimpleStats",
    "avro_codec",
    "combine_index_entries",
    "compute_partition_stats",
    "local_wall_clock_millis",
    "manifest_cache",
    "merge_entries",
    "merge_manifests",
    "read_all_entries",
    "read_index_manifest",
    "read_manifest_file",
    "read_manifest_list",
    "read_manifest_where",
    "wall_clock_to_epoch_millis",
    "write_index_manifest",
    "write_manifest_file",
    "write_manifest_list",
    "write_manifests",
]
