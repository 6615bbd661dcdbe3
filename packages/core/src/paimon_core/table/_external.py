"""Where new data files go: the table directory, or one of ``data-file.external-paths`` (Paimon's
``ExternalPathProvider``).

A file written under an external path keeps its name; the manifest records its full path
(``DataFileMeta._EXTERNAL_PATH``), so readers, compaction, expiration and orphan removal find it there whatever
the options say later. Below an external root a file sits where it would under the table: the
``data-file.path-directory``, the partition directories and ``bucket-N`` (entropy-inject adds hash
directories below the bucket).
"""

from __future__ import annotations

import random
import re

from paimon_core import options as opts
from paimon_core.errors import ConfigError
from paimon_core.storage import join_path, uri_scheme

__all__ = ["ExternalPaths", "external_roots", "murmur3_32"]

_SCHEME_GIVEN = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:")


def external_roots(options: opts.Options) -> list[str]:
    """The external roots new data files may go to (empty: the table directory), as Java's
    ``AbstractFileStore.createExternalPaths`` chooses them.

    Raises:
        ConfigError: a path has no scheme, specific-fs has no scheme to pick, or no path is left.
    """
    text = options.get_option(opts.DATA_FILE_EXTERNAL_PATHS)
    strategy = options.get_option(opts.DATA_FILE_EXTERNAL_PATHS_STRATEGY)
    if not text or strategy == "none":
        return []
    specific = options.get_option(opts.DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS)
    if strategy == "specific-fs" and specific is None:
        raise ConfigError(
            f"{opts.DATA_FILE_EXTERNAL_PATHS_STRATEGY.key} = specific-fs needs "
            f"{opts.DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS.key} (the scheme of the external paths to use)",
            opts.DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS.key,
        )
    roots = []
    for raw in text.split(","):
        path = raw.strip()
        if not _SCHEME_GIVEN.match(path):
            raise ConfigError(
                f"{opts.DATA_FILE_EXTERNAL_PATHS.key}: {path!r} has no scheme (write e.g. file:///data/t or "
                "s3://bucket/t)",
                opts.DATA_FILE_EXTERNAL_PATHS.key,
            )
        if strategy != "specific-fs" or uri_scheme(path) == str(specific).lower():
            roots.append(path)
    if not roots:
        raise ConfigError(
            f"{opts.DATA_FILE_EXTERNAL_PATHS.key} has no path of scheme {specific!r} "
            f"({opts.DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS.key})",
            opts.DATA_FILE_EXTERNAL_PATHS.key,
        )
    return roots


def _weights(options: opts.Options, count: int) -> list[int] | None:
    text = options.get_option(opts.DATA_FILE_EXTERNAL_PATHS_WEIGHTS)
    if text is None or count < 2:
        return None  # Java falls back to round-robin
    weights = [int(w) for w in text.split(",")]
    if len(weights) != count:
        raise ConfigError(
            f"{opts.DATA_FILE_EXTERNAL_PATHS_WEIGHTS.key} gives {len(weights)} weights for {count} external paths",
            opts.DATA_FILE_EXTERNAL_PATHS_WEIGHTS.key,
        )
    return weights


class ExternalPaths:
    """Picks the external path of each new data file of one (partition, bucket) writer.

    Args:
        roots: the external roots (:func:`external_roots`), non-empty.
        relative: the bucket directory relative to the table (``dt=1/bucket-0``).
        strategy: ``data-file.external-paths.strategy``.
        weights: the weight-robin weights, or None for turns.
    """

    def __init__(self, roots: list[str], relative: str, strategy: str, weights: list[int] | None) -> None:
        self.roots = roots
        self.relative = relative
        self.entropy = strategy == "entropy-inject"
        self.weights = weights if strategy == "weight-robin" else None
        # round-robin starts at a random path, as Java's does, so writers spread over the paths
        self._position = 0 if self.entropy else random.randrange(len(roots))

    @classmethod
    def of(cls, options: opts.Options, relative: str) -> ExternalPaths | None:
        """The picker of a table's options for the bucket directory ``relative``; None: no external path."""
        roots = external_roots(options)
        if not roots:
            return None
        strategy = options.get_option(opts.DATA_FILE_EXTERNAL_PATHS_STRATEGY)
        return cls(roots, relative, strategy, _weights(options, len(roots)))

    def next_path(self, file_name: str) -> str:
        """The full path of the next new file ``file_name``."""
        if self.weights is not None:
            root = random.choices(self.roots, weights=self.weights)[0]
        else:
            self._position = (self._position + 1) % len(self.roots)
            root = self.roots[self._position]
        if self.entropy:
            return join_path(root, self.relative, _entropy_dirs(file_name), file_name)
        return join_path(root, self.relative, file_name)


def _entropy_dirs(file_name: str) -> str:
    """The low 20 bits of the file name's murmur3 hash as ``bbbb/bbbb/bbbb/bbbbbbbb`` (Java's layout)."""
    bits = format(murmur3_32(file_name.encode("utf-8")) | 0x80000000, "032b")[-20:]
    return f"{bits[0:4]}/{bits[4:8]}/{bits[8:12]}/{bits[12:]}"


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit (Guava's ``murmur3_32``) as an unsigned int."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed & mask
    end = len(data) & ~3

    def mix(k: int) -> int:
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        return (k * c2) & mask

    for i in range(0, end, 4):
        h ^= mix(int.from_bytes(data[i : i + 4], "little"))
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[end:]
    if tail:
        h ^= mix(int.from_bytes(tail, "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    return h ^ (h >> 16)
