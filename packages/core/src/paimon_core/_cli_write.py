"""``paimon-py write``: Parquet, CSV or JSON-lines files into a table, in one commit, with progress.

The files are streamed batch by batch into one writer (``Table.append`` / ``overwrite`` take an iterable of
batches), so a write larger than memory works; the progress counts files and their bytes.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core.errors import ConfigError, DataFileError
from paimon_core.progress import Progress

if TYPE_CHECKING:
    from paimon_core.table import Table

__all__ = ["FORMATS", "add_write_command", "file_batches", "write_files"]

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json",
           ".ndjson": "json"}  # fmt: skip


def add_write_command(
    commands: Any,
    parents: list[argparse.ArgumentParser],
    add_table_arguments: Callable[[argparse.ArgumentParser], None],
) -> None:
    write = commands.add_parser(
        "write", help="write Parquet, CSV or JSON-lines files into a table (one commit)", parents=parents
    )
    add_table_arguments(write)
    write.add_argument(
        "files",
        nargs="*",
        help="local files to write (TABLE_DIR FILE..., WAREHOUSE FILE... --table db.t, or "
        "--warehouse WAREHOUSE --table db.t FILE...)",
    )
    write.add_argument(
        "--format", choices=sorted(set(FORMATS.values())), default=None, help="default: from the file suffix"
    )
    write.add_argument(
        "--overwrite", action="store_true", help="replace the partitions written (or the unpartitioned table)"
    )


def _format_of(path: str, given: str | None) -> str:
    if given is not None:
        return given
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise ConfigError(f"cannot tell the format of {path!r} from its suffix: give --format", "format")
    return FORMATS[suffix]


def file_batches(
    paths: Sequence[str], file_format: str | None, progress: Progress
) -> Iterator[pa.RecordBatch]:
    """The record batches of the files, one file after the other; each finished file advances the bar.

    Raises:
        ConfigError: a file's format is not given and its suffix does not tell.
        DataFileError: a file is missing or not in its format.
    """
    import pyarrow.dataset as ds

    formats = [_format_of(path, file_format) for path in paths]
    try:
        sizes = [os.path.getsize(path) for path in paths]
    except OSError as exc:
        raise DataFileError(f"cannot read {exc.filename}: {exc.strerror}", exc.filename) from None
    counter = progress.counter("write", len(paths), "files", sum(sizes))
    for path, fmt, size in zip(paths, formats, sizes, strict=True):
        try:
            yield from ds.dataset(path, format=fmt).to_batches()
        except (pa.ArrowInvalid, OSError) as exc:
            raise DataFileError(f"cannot read {path} as {fmt}: {exc}", path) from exc
        counter.advance(1, size)


def write_files(
    table: Table, paths: Sequence[str], *, file_format: str | None, overwrite: bool, progress: Progress
) -> int | None:
    """Write the files into ``table`` in one commit; the new snapshot id (None when nothing was written)."""
    batches = file_batches(paths, file_format, progress)
    return table.overwrite(batches) if overwrite else table.append(batches)
