"""Paimon data types: their JSON form in schema files (docs/format.md#schemas) and their Arrow equivalents.

Every type is a frozen dataclass deriving from :class:`DataType`; ``nullable`` is keyword-only so that
``DecimalType(10, 2)`` and ``ArrayType(IntType(), nullable=False)`` read naturally. ``str(t)`` is Java's
``asSQLString()`` (``"DECIMAL(10, 2) NOT NULL"``) and ``t.to_json()`` the value Java writes into
``schema-N`` files: that string for atomic types, an object for ARRAY/MAP/ROW/MULTISET/VECTOR.

VARIANT, BLOB and VECTOR parse and print (so schemas written by newer Java versions load), but have no
Arrow mapping here: converting them raises :class:`UnsupportedTypeError`. GEOMETRY, GEOGRAPHY, INTERVAL
and RAW are rejected when parsed.
"""

from __future__ import annotations

import dataclasses
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import pyarrow as pa

from paimon_core.errors import SchemaError, UnsupportedTypeError

__all__ = [
    "MAX_LENGTH",
    "ArrayType",
    "BigIntType",
    "BinaryType",
    "BlobType",
    "BooleanType",
    "CharType",
    "DataField",
    "DataType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FloatType",
    "IntType",
    "LocalZonedTimestampType",
    "MapType",
    "MultisetType",
    "RowType",
    "SmallIntType",
    "TimeType",
    "TimestampType",
    "TinyIntType",
    "VarBinaryType",
    "VarCharType",
    "VariantType",
    "VectorType",
    "bytes_type",
    "fields_from_arrow_schema",
    "from_arrow_type",
    "parse_data_type",
    "string_type",
    "to_arrow_field",
    "to_arrow_schema",
    "to_arrow_type",
]

MAX_LENGTH = 2147483647
"""Length of STRING (= ``VARCHAR(MAX_LENGTH)``) and BYTES (= ``VARBINARY(MAX_LENGTH)``)."""

_T = TypeVar("_T", bound="DataType")
JsonValue = Any  # a str for atomic types, a dict for nested ones


# --- the types ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataType(ABC):
    """Base of all Paimon data types."""

    nullable: bool = field(default=True, kw_only=True)

    def copy(self: _T, nullable: bool) -> _T:
        """This type with the given nullability."""
        return dataclasses.replace(self, nullable=nullable)

    @abstractmethod
    def sql(self) -> str:
        """The type without nullability, as Java's ``asSQLString`` prints it."""

    def __str__(self) -> str:
        return self.sql() if self.nullable else self.sql() + " NOT NULL"

    def to_json(self) -> JsonValue:
        """The JSON value Java writes for this type in a schema file."""
        return str(self)

    def _not_null_suffix(self) -> str:
        return "" if self.nullable else " NOT NULL"


@dataclass(frozen=True)
class BooleanType(DataType):
    def sql(self) -> str:
        return "BOOLEAN"


@dataclass(frozen=True)
class TinyIntType(DataType):
    def sql(self) -> str:
        return "TINYINT"


@dataclass(frozen=True)
class SmallIntType(DataType):
    def sql(self) -> str:
        return "SMALLINT"


@dataclass(frozen=True)
class IntType(DataType):
    def sql(self) -> str:
        return "INT"


@dataclass(frozen=True)
class BigIntType(DataType):
    def sql(self) -> str:
        return "BIGINT"


@dataclass(frozen=True)
class FloatType(DataType):
    def sql(self) -> str:
        return "FLOAT"


@dataclass(frozen=True)
class DoubleType(DataType):
    def sql(self) -> str:
        return "DOUBLE"


@dataclass(frozen=True)
class DecimalType(DataType):
    precision: int = 10
    scale: int = 0

    MAX_PRECISION: ClassVar[int] = 38
    MAX_COMPACT_PRECISION: ClassVar[int] = 18
    """Up to this precision the unscaled value fits a long (BinaryRow stores it inline)."""

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= self.MAX_PRECISION:
            raise SchemaError(f"decimal precision must be between 1 and 38, got {self.precision}")
        if not 0 <= self.scale <= self.precision:
            raise SchemaError(f"decimal scale must be between 0 and {self.precision}, got {self.scale}")

    def sql(self) -> str:
        return f"DECIMAL({self.precision}, {self.scale})"

    @property
    def is_compact(self) -> bool:
        return self.precision <= self.MAX_COMPACT_PRECISION


def _check_length(kind: str, length: int) -> None:
    if not 1 <= length <= MAX_LENGTH:
        raise SchemaError(f"{kind} length must be between 1 and {MAX_LENGTH}, got {length}")


def _check_precision(kind: str, precision: int) -> None:
    if not 0 <= precision <= 9:
        raise SchemaError(f"{kind} precision must be between 0 and 9, got {precision}")


@dataclass(frozen=True)
class CharType(DataType):
    length: int

    def __post_init__(self) -> None:
        _check_length("CHAR", self.length)

    def sql(self) -> str:
        return f"CHAR({self.length})"


@dataclass(frozen=True)
class VarCharType(DataType):
    """VARCHAR(n); ``VarCharType(MAX_LENGTH)`` is STRING (see :func:`string_type`)."""

    length: int

    def __post_init__(self) -> None:
        _check_length("VARCHAR", self.length)

    def sql(self) -> str:
        return "STRING" if self.length == MAX_LENGTH else f"VARCHAR({self.length})"


@dataclass(frozen=True)
class BinaryType(DataType):
    length: int

    def __post_init__(self) -> None:
        _check_length("BINARY", self.length)

    def sql(self) -> str:
        return f"BINARY({self.length})"


@dataclass(frozen=True)
class VarBinaryType(DataType):
    """VARBINARY(n); ``VarBinaryType(MAX_LENGTH)`` is BYTES (see :func:`bytes_type`)."""

    length: int

    def __post_init__(self) -> None:
        _check_length("VARBINARY", self.length)

    def sql(self) -> str:
        return "BYTES" if self.length == MAX_LENGTH else f"VARBINARY({self.length})"


@dataclass(frozen=True)
class DateType(DataType):
    def sql(self) -> str:
        return "DATE"


@dataclass(frozen=True)
class TimeType(DataType):
    precision: int = 0

    def __post_init__(self) -> None:
        _check_precision("TIME", self.precision)

    def sql(self) -> str:
        return f"TIME({self.precision})"


@dataclass(frozen=True)
class TimestampType(DataType):
    """TIMESTAMP(p) WITHOUT TIME ZONE: a wall-clock date and time."""

    precision: int = 6

    def __post_init__(self) -> None:
        _check_precision("TIMESTAMP", self.precision)

    def sql(self) -> str:
        return f"TIMESTAMP({self.precision})"


@dataclass(frozen=True)
class LocalZonedTimestampType(DataType):
    """TIMESTAMP(p) WITH LOCAL TIME ZONE (TIMESTAMP_LTZ): an instant on the UTC time line."""

    precision: int = 6

    def __post_init__(self) -> None:
        _check_precision("TIMESTAMP_LTZ", self.precision)

    def sql(self) -> str:
        return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"


@dataclass(frozen=True)
class VariantType(DataType):
    def sql(self) -> str:
        return "VARIANT"


@dataclass(frozen=True)
class BlobType(DataType):
    def sql(self) -> str:
        return "BLOB"


@dataclass(frozen=True)
class ArrayType(DataType):
    element: DataType

    def sql(self) -> str:
        return f"ARRAY<{self.element}>"

    def to_json(self) -> JsonValue:
        return {"type": "ARRAY" + self._not_null_suffix(), "element": self.element.to_json()}


@dataclass(frozen=True)
class MultisetType(DataType):
    element: DataType

    def sql(self) -> str:
        return f"MULTISET<{self.element}>"

    def to_json(self) -> JsonValue:
        return {"type": "MULTISET" + self._not_null_suffix(), "element": self.element.to_json()}


@dataclass(frozen=True)
class VectorType(DataType):
    length: int
    element: DataType

    def __post_init__(self) -> None:
        _check_length("VECTOR", self.length)

    def sql(self) -> str:
        return f"VECTOR<{self.element}, {self.length}>"

    def to_json(self) -> JsonValue:
        return {
            "type": "VECTOR" + self._not_null_suffix(),
            "element": self.element.to_json(),
            "length": self.length,
        }


@dataclass(frozen=True)
class MapType(DataType):
    key: DataType
    value: DataType

    def sql(self) -> str:
        return f"MAP<{self.key}, {self.value}>"

    def to_json(self) -> JsonValue:
        return {
            "type": "MAP" + self._not_null_suffix(),
            "key": self.key.to_json(),
            "value": self.value.to_json(),
        }


@dataclass(frozen=True)
class DataField:
    """A named column (or nested field) with its Paimon field id."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The field as Java writes it: ``id``, ``name``, ``type``, then optional keys when set."""
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        if self.default_value is not None:
            out["defaultValue"] = self.default_value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DataField:
        """Parse a field object; its ``id`` (and those of nested fields) must be present."""
        return _parse_field(data, None)

    def sql(self) -> str:
        text = f"{_escape_identifier(self.name)} {self.type}"
        if self.description:
            text += " COMMENT '" + self.description.replace("'", "''") + "'"
        if self.default_value is not None:
            text += " DEFAULT " + self.default_value
        return text


@dataclass(frozen=True)
class RowType(DataType):
    fields: tuple[DataField, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise SchemaError(f"duplicate field names in ROW: {names}")

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"no field {name!r} in {self}")

    def sql(self) -> str:
        return "ROW<" + ", ".join(f.sql() for f in self.fields) + ">"

    def to_json(self) -> JsonValue:
        return {"type": "ROW" + self._not_null_suffix(), "fields": [f.to_json() for f in self.fields]}


def string_type(nullable: bool = True) -> VarCharType:
    """STRING, i.e. ``VARCHAR(2147483647)``."""
    return VarCharType(MAX_LENGTH, nullable=nullable)


def bytes_type(nullable: bool = True) -> VarBinaryType:
    """BYTES, i.e. ``VARBINARY(2147483647)``."""
    return VarBinaryType(MAX_LENGTH, nullable=nullable)


def _escape_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# --- parsing ------------------------------------------------------------------------------------------------


class _FieldIds:
    """Java's id counter for fields written without ids (``DataTypeJsonParser``)."""

    def __init__(self) -> None:
        self.last = -1
        self.seen_explicit = False


def parse_data_type(value: JsonValue) -> DataType:
    """Parse a type as found in a schema file: an SQL type string or a nested-type object.

    Accepts what Java's ``DataTypeJsonParser`` accepts: keywords in any case, the aliases ``INTEGER``,
    ``NUMERIC``/``DEC``, ``DOUBLE PRECISION``, ``TIMESTAMP_LTZ(p)``, ``... WITHOUT TIME ZONE``, explicit
    ``NULL``/``NOT NULL``, default lengths (1) and precisions (DECIMAL 10,0; TIME 0; TIMESTAMP 6), and the
    suffix forms ``INT ARRAY`` / ``INT MULTISET``. Row fields without ids are numbered from 0 as Java does.

    Raises:
        SchemaError: the value is not a valid type (UnsupportedTypeError for known but unsupported types).
    """
    return _parse_json_type(value, _FieldIds())


def _parse_json_type(value: JsonValue, ids: _FieldIds | None) -> DataType:
    if isinstance(value, str):
        return _SqlTypeParser(value).parse()
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise SchemaError(f"cannot parse data type from {value!r}")
    kind = value["type"].strip().upper()
    nullable = "NOT NULL" not in kind
    try:
        if kind.startswith("ARRAY"):
            return ArrayType(_parse_json_type(value["element"], ids), nullable=nullable)
        if kind.startswith("VECTOR"):
            element = _parse_json_type(value["element"], ids)
            return VectorType(int(value["length"]), element, nullable=nullable)
        if kind.startswith("MULTISET"):
            return MultisetType(_parse_json_type(value["element"], ids), nullable=nullable)
        if kind.startswith("MAP"):
            key = _parse_json_type(value["key"], ids)
            return MapType(key, _parse_json_type(value["value"], ids), nullable=nullable)
        if kind.startswith("ROW"):
            fields = value["fields"]
            if not isinstance(fields, list):
                raise SchemaError(f"ROW fields must be a list: {value!r}")
            return RowType(tuple(_parse_field(f, ids) for f in fields), nullable=nullable)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, SchemaError):
            raise
        raise SchemaError(f"cannot parse data type from {value!r}: {exc!r}") from exc
    raise SchemaError(f"cannot parse data type from {value!r}")


def _parse_field(data: Any, ids: _FieldIds | None) -> DataField:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise SchemaError(f"cannot parse data field from {data!r}")
    if "id" in data:
        if ids is not None and ids.last != -1 and not ids.seen_explicit:
            raise SchemaError("partial field ids are not allowed")
        if ids is not None:
            ids.seen_explicit = True
        if not isinstance(data["id"], int) or isinstance(data["id"], bool):
            raise SchemaError(f"field id must be an integer: {data!r}")
        field_id = data["id"]
    elif ids is not None and not ids.seen_explicit:
        ids.last += 1
        field_id = ids.last
    else:
        raise SchemaError(f"field has no id: {data!r}")
    field_type = _parse_json_type(data.get("type"), ids)
    # Java reads a JSON null here as the text "null"; we read it as no value, which is what was meant.
    description = data.get("description")
    default_value = data.get("defaultValue")
    return DataField(
        field_id,
        data["name"],
        field_type,
        None if description is None else str(description),
        None if default_value is None else str(default_value),
    )


_TOKEN = re.compile(r"\s*(?:(?P<int>\d+)|(?P<word>[A-Za-z_][A-Za-z_0-9]*)|(?P<sym>[(),<>]))")
_SIMPLE_KEYWORDS: dict[str, type[DataType]] = {
    "BOOLEAN": BooleanType,
    "TINYINT": TinyIntType,
    "SMALLINT": SmallIntType,
    "INT": IntType,
    "INTEGER": IntType,
    "BIGINT": BigIntType,
    "FLOAT": FloatType,
    "DATE": DateType,
    "VARIANT": VariantType,
    "BLOB": BlobType,
}
_UNSUPPORTED_KEYWORDS = {"INTERVAL", "RAW", "GEOMETRY", "GEOGRAPHY", "LEGACY", "NULL"}


class _SqlTypeParser:
    """Recursive descent over the token stream of an atomic type string (plus VECTOR<...>)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = _TOKEN.match(text, pos)
            if match is None:
                raise self.error(f"unexpected character {text[pos:].lstrip()[:1]!r}")
            word = match.group("word")
            self.tokens.append(word.upper() if word else match.group("int") or match.group("sym"))
            pos = match.end()
        self.pos = 0

    def error(self, cause: str) -> SchemaError:
        return SchemaError(f"cannot parse data type {self.text!r}: {cause}")

    def peek(self, offset: int = 0) -> str | None:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end")
        if expected is not None and token != expected:
            raise self.error(f"expected {expected!r} but found {token!r}")
        self.pos += 1
        return token

    def take_int(self) -> int:
        token = self.take()
        if not token.isdigit():
            raise self.error(f"expected an integer but found {token!r}")
        return int(token)

    def parse(self) -> DataType:
        result = self.parse_with_nullability()
        if self.peek() is not None:
            raise self.error(f"unexpected token {self.peek()!r}")
        return result

    def parse_nullability(self) -> bool:
        if self.peek() == "NOT" and self.peek(1) == "NULL":
            self.pos += 2
            return False
        if self.peek() == "NULL":
            self.pos += 1
        return True

    def parse_with_nullability(self) -> DataType:
        result = self.parse_keyword_type()
        result = result.copy(self.parse_nullability())
        if self.peek() == "ARRAY":
            self.take()
            return ArrayType(result, nullable=self.parse_nullability())
        if self.peek() == "MULTISET":
            self.take()
            return MultisetType(result, nullable=self.parse_nullability())
        return result

    def optional_int(self, default: int) -> int:
        if self.peek() != "(":
            return default
        self.take("(")
        value = self.take_int()
        self.take(")")
        return value

    def skip_without_time_zone(self) -> None:
        if self.peek() == "WITHOUT":
            for word in ("WITHOUT", "TIME", "ZONE"):
                self.take(word)

    def parse_keyword_type(self) -> DataType:
        keyword = self.take()
        simple = _SIMPLE_KEYWORDS.get(keyword)
        if simple is not None:
            return simple()
        if keyword == "DOUBLE":
            if self.peek() == "PRECISION":
                self.take()
            return DoubleType()
        if keyword == "STRING":
            return string_type()
        if keyword == "BYTES":
            return bytes_type()
        if keyword == "CHAR":
            return CharType(self.optional_int(1))
        if keyword == "VARCHAR":
            return VarCharType(self.optional_int(1))
        if keyword == "BINARY":
            return BinaryType(self.optional_int(1))
        if keyword == "VARBINARY":
            return VarBinaryType(self.optional_int(1))
        if keyword in ("DECIMAL", "NUMERIC", "DEC"):
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = self.take_int()
                if self.peek() == ",":
                    self.take(",")
                    scale = self.take_int()
                self.take(")")
            return DecimalType(precision, scale)
        if keyword == "TIME":
            precision = self.optional_int(0)
            self.skip_without_time_zone()
            return TimeType(precision)
        if keyword == "TIMESTAMP":
            precision = self.optional_int(6)
            if self.peek() == "WITH":
                for word in ("WITH", "LOCAL", "TIME", "ZONE"):
                    self.take(word)
                return LocalZonedTimestampType(precision)
            self.skip_without_time_zone()
            return TimestampType(precision)
        if keyword == "TIMESTAMP_LTZ":
            return LocalZonedTimestampType(self.optional_int(6))
        if keyword == "VECTOR":
            self.take("<")
            element = self.parse_with_nullability()
            self.take(",")
            length = self.take_int()
            self.take(">")
            return VectorType(length, element)
        if keyword in _UNSUPPORTED_KEYWORDS or keyword in ("ARRAY", "MAP", "ROW", "MULTISET"):
            raise UnsupportedTypeError(
                f"cannot parse data type {self.text!r}: {keyword} is not supported here"
            )
        raise self.error(f"unknown type {keyword!r}")


# --- Arrow --------------------------------------------------------------------------------------------------

FIELD_ID_KEY = b"PARQUET:field_id"
_STRUCTURED_ID_BASE = 2147483647 // 4
_STRUCTURED_DEPTH_LIMIT = 1 << 10
_TIME_UNITS = ("s", "ms", "us", "ns")


def _int32(value: int) -> int:
    """Wrap like Java int arithmetic does."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _unit_for_precision(precision: int) -> str:
    return "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def to_arrow_type(data_type: DataType) -> pa.DataType:
    """The Arrow type holding values of ``data_type`` (nested fields carry their field ids).

    Raises:
        UnsupportedTypeError: for MULTISET, VECTOR, VARIANT and BLOB.
    """
    return _to_arrow(data_type, None, 0)


def to_arrow_field(data_field: DataField) -> pa.Field:
    """The Arrow field of a column: name, nullability and the field id in ``PARQUET:field_id``.

    List elements and map keys/values get the ids Java's Parquet writer gives them
    (``SpecialFields.getArrayElementFieldId`` and friends), so Parquet files carry the same ids.
    """
    return _arrow_field(data_field.name, data_field.type, data_field.id, 0)


def to_arrow_schema(fields: Iterable[DataField]) -> pa.Schema:
    return pa.schema([to_arrow_field(f) for f in fields])


def _arrow_field(
    name: str, data_type: DataType, field_id: int | None, depth: int, own_id: int | None = None
) -> pa.Field:
    """An Arrow field; nested ids derive from ``field_id``, the field's own id is ``own_id`` if given.

    Java's Parquet converter passes the column's id down to list elements and map keys/values and then
    overrides their own ids (``convertToParquetType(..., fieldId, depth + 1).withId(special)``).
    """
    label = field_id if own_id is None else own_id
    metadata = None if label is None else {FIELD_ID_KEY: str(label).encode()}
    return pa.field(
        name, _to_arrow(data_type, field_id, depth), nullable=data_type.nullable, metadata=metadata
    )


_SIMPLE_TO_ARROW: dict[type[DataType], pa.DataType] = {
    BooleanType: pa.bool_(),
    TinyIntType: pa.int8(),
    SmallIntType: pa.int16(),
    IntType: pa.int32(),
    BigIntType: pa.int64(),
    FloatType: pa.float32(),
    DoubleType: pa.float64(),
    DateType: pa.date32(),
    CharType: pa.string(),
    VarCharType: pa.string(),
    VarBinaryType: pa.binary(),
}


def _to_arrow(t: DataType, field_id: int | None, depth: int) -> pa.DataType:
    simple = _SIMPLE_TO_ARROW.get(type(t))
    if simple is not None:
        return simple
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, BinaryType):
        return pa.binary(t.length)
    if isinstance(t, TimeType):
        return pa.time32("ms") if t.precision <= 3 else pa.time64(_unit_for_precision(t.precision))
    if isinstance(t, TimestampType):
        return pa.timestamp(_unit_for_precision(t.precision))
    if isinstance(t, LocalZonedTimestampType):
        return pa.timestamp(_unit_for_precision(t.precision), tz="UTC")
    if isinstance(t, ArrayType):
        element_id = None
        if field_id is not None:
            element_id = _int32(_STRUCTURED_ID_BASE + field_id * _STRUCTURED_DEPTH_LIMIT + depth + 1)
        return pa.list_(_arrow_field("element", t.element, field_id, depth + 1, element_id))
    if isinstance(t, MapType):
        key_id = value_id = None
        if field_id is not None:
            key_id = _int32(_STRUCTURED_ID_BASE - field_id * _STRUCTURED_DEPTH_LIMIT - depth - 1)
            value_id = _int32(_STRUCTURED_ID_BASE + field_id * _STRUCTURED_DEPTH_LIMIT + depth + 1)
        # Arrow (like Parquet) has no nullable map keys; Java's writer also forces them NOT NULL.
        key = _arrow_field("key", t.key.copy(False), field_id, depth + 1, key_id)
        return pa.map_(key, _arrow_field("value", t.value, field_id, depth + 1, value_id))
    if isinstance(t, RowType):
        # Java restarts the depth for the fields of a nested row (convertToParquetType(DataField)).
        return pa.struct([_arrow_field(f.name, f.type, f.id, 0) for f in t.fields])
    raise UnsupportedTypeError(f"data type {t} has no Arrow equivalent")


def from_arrow_type(arrow_type: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type.

    Fields of nested structs are numbered from 0 in the order Java's ``ReassignFieldId`` uses; tables get
    their ids from :func:`fields_from_arrow_schema` instead.

    Raises:
        UnsupportedTypeError: null, union, duration, interval, float16, and other types without a Paimon
            equivalent, and decimals wider than 38 digits.
    """
    return _from_arrow(arrow_type, nullable, _FieldIds())


def fields_from_arrow_schema(schema: pa.Schema, first_id: int = 0) -> tuple[list[DataField], int]:
    """Columns with fresh field ids for an Arrow schema, and the highest id assigned.

    Ids follow Java's ``Schema.Builder``: each top-level column takes the next id, then the fields nested
    in its type are numbered depth-first (inside a nested row, a field's own id comes after the ids of the
    fields nested in its type, as ``ReassignFieldId`` does). Ids already present in the Arrow metadata
    are ignored. With no columns, the highest id is ``first_id - 1``. A top-level field's ``comment``
    metadata (Spark's key for a column comment) becomes the column's description.
    """
    ids = _FieldIds()
    ids.last = first_id - 1
    fields: list[DataField] = []
    for arrow_field in schema:
        ids.last += 1
        field_id = ids.last
        field_type = _from_arrow(arrow_field.type, arrow_field.nullable, ids)
        comment = (arrow_field.metadata or {}).get(b"comment")
        fields.append(
            DataField(field_id, arrow_field.name, field_type, comment.decode() if comment else None)
        )
    return fields, ids.last


def _from_arrow(t: pa.DataType, nullable: bool, ids: _FieldIds) -> DataType:
    simple = _simple_from_arrow(t)
    if simple is not None:
        return simple.copy(nullable)
    if pa.types.is_decimal(t):
        if t.precision > DecimalType.MAX_PRECISION:
            raise UnsupportedTypeError(f"Arrow type {t}: Paimon decimals have at most 38 digits")
        return DecimalType(t.precision, t.scale, nullable=nullable)
    if pa.types.is_fixed_size_binary(t):
        return BinaryType(t.byte_width, nullable=nullable)
    if pa.types.is_time(t):
        return TimeType(_TIME_UNITS.index(t.unit) * 3, nullable=nullable)
    if pa.types.is_timestamp(t):
        precision = _TIME_UNITS.index(t.unit) * 3
        if t.tz is not None:
            return LocalZonedTimestampType(precision, nullable=nullable)
        return TimestampType(precision, nullable=nullable)
    if pa.types.is_dictionary(t):
        return _from_arrow(t.value_type, nullable, ids)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        element = t.value_field
        return ArrayType(_from_arrow(element.type, element.nullable, ids), nullable=nullable)
    if pa.types.is_map(t):
        key = _from_arrow(t.key_field.type, t.key_field.nullable, ids)
        value = _from_arrow(t.item_field.type, t.item_field.nullable, ids)
        return MapType(key, value, nullable=nullable)
    if pa.types.is_struct(t):
        fields = []
        for child in (t.field(i) for i in range(t.num_fields)):
            child_type = _from_arrow(child.type, child.nullable, ids)
            ids.last += 1
            fields.append(DataField(ids.last, child.name, child_type))
        return RowType(tuple(fields), nullable=nullable)
    raise UnsupportedTypeError(f"Arrow type {t} has no Paimon equivalent")


def _simple_from_arrow(t: pa.DataType) -> DataType | None:
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_int8(t):
        return TinyIntType()
    if pa.types.is_int16(t):
        return SmallIntType()
    if pa.types.is_int32(t):
        return IntType()
    if pa.types.is_int64(t):
        return BigIntType()
    if pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_float64(t):
        return DoubleType()
    if pa.types.is_date(t):
        return DateType()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return string_type()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return bytes_type()
    return None
