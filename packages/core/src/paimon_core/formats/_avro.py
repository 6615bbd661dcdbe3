"""Avro data files as Java Paimon writes them (``AvroSchemaConverter``, ``AvroRowDatumWriter``).

The facts followed:

* the row is a record named ``org.apache.paimon.avro.generated.record`` inside a union with ``null`` (Java's
  row type is nullable, so each datum is written as the union's second branch); a nested row is a record
  named after its parent and field (``<parent>_<field>``); a nullable field is ``["null", T]`` (null first)
  with a null default;
* TINYINT/SMALLINT/INT are ``int``, DATE ``int`` (date), TIME ``int`` (time-millis; a precision above 3 is
  refused), TIMESTAMP ``long`` (timestamp-millis up to precision 3, timestamp-micros up to 6; above is
  refused), TIMESTAMP_LTZ likewise with local-timestamp-millis/micros, DECIMAL ``bytes`` (decimal), CHAR and
  VARCHAR ``string``, BINARY and VARBINARY ``bytes``;
* a map with a CHAR/VARCHAR key is an Avro ``map``; any other key makes it an array of ``{key, value}``
  records with the ``map`` logical type;
* the codec is ``file.compression`` as Java's writer maps it: ``zstd`` is Zstandard at
  ``file.compression.zstd-level``, other names are Avro codec names (``null``, ``deflate``, ``snappy``,
  ``bzip2``, ``xz``, ``zstandard``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO

import fastavro
import pyarrow as pa

from paimon_core._optional import import_optional
from paimon_core.errors import ConfigError, SchemaError

RECORD_NAME = "org.apache.paimon.avro.generated.record"
"""The name Java gives the row record of an Avro data file."""

AVRO_CODECS = {
    "zstd": "zstandard",
    "zstandard": "zstandard",
    "snappy": "snappy",
    "deflate": "deflate",
    "bzip2": "bzip2",
    "xz": "xz",
    "null": "null",
    "none": "null",
    "uncompressed": "null",
}
"""``file.compression`` values an Avro data file can be written with, and the Avro codec each names."""

_SYNC_INTERVAL = 64 * 1024  # Java's DataFileWriter default block size


def avro_codec(compression: str, option: str = "file.compression") -> str:
    """The Avro codec of a ``file.compression`` value.

    Raises:
        ConfigError: a codec Avro data files cannot have (Java's Avro writer refuses it too), naming it.
    """
    codec = AVRO_CODECS.get(compression.lower())
    if codec is None:
        raise ConfigError(
            f"{option} = {compression} cannot compress Avro data files: Avro's codecs are "
            f"{', '.join(sorted(set(AVRO_CODECS) - {'none', 'uncompressed'}))}",
            option,
        )
    if codec == "snappy":
        # fastavro's snappy codec needs cramjam: refused before any file is written when it is missing
        import_optional("cramjam", f"{option} = snappy for Avro data files", "snappy")
    return codec


def avro_schema(schema: pa.Schema) -> list[Any]:
    """The writer schema of a data file of ``schema`` (a union of null and the row record, as Java's).

    Raises:
        SchemaError: a column Avro cannot hold (TIME above millisecond, TIMESTAMP above microsecond
            precision), naming it.
    """
    fields = []
    for arrow_field in schema:
        fields.append(_field(arrow_field, RECORD_NAME))
    return ["null", {"type": "record", "name": RECORD_NAME, "fields": fields}]


def _field(arrow_field: pa.Field, row_name: str) -> dict[str, Any]:
    converted = _schema_of(
        arrow_field.type, arrow_field.nullable, f"{row_name}_{arrow_field.name}", arrow_field
    )
    field: dict[str, Any] = {"name": arrow_field.name, "type": converted}
    if arrow_field.nullable:
        field["default"] = None
    return field


def _nullable(schema: Any, nullable: bool) -> Any:
    return ["null", schema] if nullable else schema


def _schema_of(t: pa.DataType, nullable: bool, row_name: str, column: pa.Field) -> Any:
    if pa.types.is_boolean(t):
        return _nullable("boolean", nullable)
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return _nullable("int", nullable)
    if pa.types.is_int64(t):
        return _nullable("long", nullable)
    if pa.types.is_float32(t):
        return _nullable("float", nullable)
    if pa.types.is_float64(t):
        return _nullable("double", nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _nullable("string", nullable)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return _nullable("bytes", nullable)
    if pa.types.is_decimal(t):
        return _nullable(
            {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}, nullable
        )
    if pa.types.is_date32(t):
        return _nullable({"type": "int", "logicalType": "date"}, nullable)
    if pa.types.is_time32(t):
        return _nullable({"type": "int", "logicalType": "time-millis"}, nullable)
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            raise _unsupported(column, "a TIMESTAMP precision above 6")
        local = "local-" if t.tz is not None else ""
        unit = "micros" if t.unit == "us" else "millis"
        return _nullable({"type": "long", "logicalType": f"{local}timestamp-{unit}"}, nullable)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        value = t.value_field
        return _nullable(
            {"type": "array", "items": _schema_of(value.type, value.nullable, row_name, column)}, nullable
        )
    if pa.types.is_map(t):
        return _nullable(_map_schema(t, row_name, column), nullable)
    if pa.types.is_struct(t):
        fields = [_field(t.field(i), row_name) for i in range(t.num_fields)]
        return _nullable({"type": "record", "name": row_name, "fields": fields}, nullable)
    if pa.types.is_time64(t):
        raise _unsupported(column, "a TIME precision above 3")
    raise _unsupported(column, f"the Arrow type {t}")


def _map_schema(t: pa.MapType, row_name: str, column: pa.Field) -> dict[str, Any]:
    key, item = t.key_field, t.item_field
    if pa.types.is_string(key.type) or pa.types.is_large_string(key.type):
        return {"type": "map", "values": _schema_of(item.type, item.nullable, row_name, column)}
    value: dict[str, Any] = {
        "name": "value",
        "type": _schema_of(item.type, item.nullable, f"{row_name}_value", column),
    }
    if item.nullable:
        value["default"] = None
    entry = {
        "type": "record",
        "name": row_name,
        "fields": [{"name": "key", "type": _schema_of(key.type, False, f"{row_name}_key", column)}, value],
    }
    return {"type": "array", "logicalType": "map", "items": entry}


def _unsupported(column: pa.Field, what: str) -> SchemaError:
    return SchemaError(
        f"column {column.name} ({column.type}) cannot be written to an Avro data file: Avro data files hold "
        f"no {what} (as in Java Paimon); use another file.format for this table or level"
    )


# --- values ---------------------------------------------------------------------------------------------------


def _millis(t: pa.DataType) -> pa.DataType:
    """``t`` with every TIMESTAMP(0) in milliseconds (Avro's unit for it), a step before :func:`_physical`."""
    if pa.types.is_timestamp(t) and t.unit == "s":
        return pa.timestamp("ms", tz=t.tz)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_millis(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_millis(t.key_type)), t.item_field.with_type(_millis(t.item_type))
        )
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_millis(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _physical(t: pa.DataType) -> pa.DataType:
    """The Arrow type whose Python values fastavro writes for ``t``: temporal types as their integers."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(_physical(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_physical(t.key_type)), t.item_field.with_type(_physical(t.item_type))
        )
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_physical(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_map(t.value_type)
    if pa.types.is_struct(t):
        return any(_has_map(t.field(i).type) for i in range(t.num_fields))
    return False


Converter = Callable[[Any], Any]


def _map_writer(t: pa.DataType) -> Converter | None:
    """A function turning Arrow's Python value of ``t`` into what the Avro schema wants (maps: a dict, or a
    list of key/value records); None when the value is fine as it is."""
    if not _has_map(t):
        return None
    if pa.types.is_map(t):
        key, value = _map_writer(t.key_type), _map_writer(t.item_type)
        as_dict = pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)

        def convert_map(v: Any) -> Any:
            if v is None:
                return None
            pairs = [(k if key is None else key(k), x if value is None else value(x)) for k, x in v]
            return dict(pairs) if as_dict else [{"key": k, "value": x} for k, x in pairs]

        return convert_map
    if pa.types.is_struct(t):
        fields = [(t.field(i).name, _map_writer(t.field(i).type)) for i in range(t.num_fields)]

        def convert_struct(v: Any) -> Any:
            if v is None:
                return None
            return {name: (v[name] if f is None else f(v[name])) for name, f in fields}

        return convert_struct
    element = _map_writer(t.value_type)
    assert element is not None
    return lambda v: None if v is None else [element(x) for x in v]


def avro_records(data: pa.Table) -> list[dict[str, Any]]:
    """The rows of ``data`` as the dicts fastavro writes with :func:`avro_schema` of its schema."""
    millis = pa.schema([f.with_type(_millis(f.type)) for f in data.schema])
    if not millis.equals(data.schema):
        data = data.cast(millis)
    physical = pa.schema([f.with_type(_physical(f.type)) for f in data.schema])
    if not physical.equals(data.schema):
        data = data.cast(physical)
    rows: list[dict[str, Any]] = data.to_pylist()
    converters: list[tuple[str, Converter]] = []
    for arrow_field in data.schema:
        convert = _map_writer(arrow_field.type)
        if convert is not None:
            converters.append((arrow_field.name, convert))
    if converters:
        for row in rows:
            for name, convert in converters:
                row[name] = convert(row[name])
    return rows


class AvroFileWriter:
    """Writes Arrow tables of ``schema`` as one Avro object container file onto ``stream``.

    Args:
        stream: the file's output stream (left open by :meth:`close`).
        schema: the Arrow schema of the tables written.
        compression: ``file.compression`` (see :func:`avro_codec`).
        zstd_level: the Zstandard level when the codec is ``zstd``.

    Raises:
        ConfigError: a codec Avro cannot use.
        SchemaError: a column Avro cannot hold.
    """

    footer = None  # no statistics in the file: the writer's caller computes them from the data

    def __init__(self, stream: BinaryIO, schema: pa.Schema, compression: str, zstd_level: int = 1) -> None:
        self.schema = schema
        codec = avro_codec(compression)
        parsed = fastavro.parse_schema(avro_schema(schema))
        level = zstd_level if codec == "zstandard" else None
        self._writer = fastavro.write.Writer(
            stream, parsed, codec=codec, sync_interval=_SYNC_INTERVAL, compression_level=level
        )

    def write(self, data: pa.Table) -> None:
        for record in avro_records(data):
            self._writer.write(record)

    def close(self) -> None:
        self._writer.flush()


# --- reading --------------------------------------------------------------------------------------------------


def arrow_column(values: list[Any], schema: Any) -> pa.Array:
    """The Arrow array of one column's decoded values, typed by the column's Avro ``schema`` (maps come back
    as maps, not as the structs Arrow would infer from dicts); Arrow's own inference for a schema not
    recognised here."""
    arrow_type = _arrow_type(schema)
    if arrow_type is None:
        return pa.array(values)
    convert = _map_reader(schema)
    if convert is not None:
        values = [convert(v) for v in values]
    return pa.array(values, type=arrow_type)


_PRIMITIVES = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
_LOGICAL = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
}


def _branch(schema: Any) -> Any:
    """The non-null branch of a nullable union (the schema itself otherwise)."""
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return branches[0] if len(branches) == 1 else None
    return schema


def _arrow_type(schema: Any) -> pa.DataType | None:
    schema = _branch(schema)
    if isinstance(schema, str):
        return _PRIMITIVES.get(schema)
    if not isinstance(schema, dict):
        return None
    logical = schema.get("logicalType")
    kind = schema.get("type")
    if logical == "decimal":
        return pa.decimal128(int(schema["precision"]), int(schema.get("scale", 0)))
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    if kind == "array" and logical == "map":
        fields = {f["name"]: f["type"] for f in _branch(schema["items"])["fields"]}
        key, value = _arrow_type(fields.get("key")), _arrow_type(fields.get("value"))
        return None if key is None or value is None else pa.map_(key, value)
    if kind == "array":
        item = _arrow_type(schema["items"])
        return None if item is None else pa.list_(item)
    if kind == "map":
        value = _arrow_type(schema["values"])
        return None if value is None else pa.map_(pa.string(), value)
    if kind == "record":
        types = [(f["name"], _arrow_type(f["type"])) for f in schema["fields"]]
        if any(t is None for _, t in types):
            return None
        return pa.struct([(name, t) for name, t in types if t is not None])
    if isinstance(kind, (str, dict, list)) and kind != schema:
        return _arrow_type(kind)
    return None


def _map_reader(schema: Any) -> Converter | None:
    """A function turning fastavro's value into one ``pa.array`` takes for :func:`_arrow_type` (maps as
    key/value pairs); None when none is needed."""
    schema = _branch(schema)
    if not isinstance(schema, dict):
        return None
    kind, logical = schema.get("type"), schema.get("logicalType")
    if kind == "map":
        values = _map_reader(schema["values"])
        return lambda v: (
            None if v is None else [(k, x if values is None else values(x)) for k, x in v.items()]
        )
    if kind == "array" and logical == "map":
        fields = {f["name"]: f["type"] for f in _branch(schema["items"])["fields"]}
        key, value = _map_reader(fields["key"]), _map_reader(fields["value"])
        return lambda v: (
            None
            if v is None
            else [
                (
                    e["key"] if key is None else key(e["key"]),
                    e["value"] if value is None else value(e["value"]),
                )
                for e in v
            ]
        )
    if kind == "array":
        item = _map_reader(schema["items"])
        return None if item is None else (lambda v: None if v is None else [item(x) for x in v])
    if kind == "record":
        readers = [(f["name"], _map_reader(f["type"])) for f in schema["fields"]]
        if all(f is None for _, f in readers):
            return None
        return lambda v: None if v is None else {n: (v[n] if f is None else f(v[n])) for n, f in readers}
    return None


__all__ = [
    "AVRO_CODECS",
    "RECORD_NAME",
    "AvroFileWriter",
    "arrow_column",
    "avro_codec",
    "avro_records",
    "avro_schema",
]
