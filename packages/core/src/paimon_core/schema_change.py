"""Schema evolution: the changes ``Catalog.alter_table`` applies, named as ``pypaimon`` names them.

Each change is checked the way Java Paimon checks it, and refused with a :class:`SchemaError` saying why:
partition and primary-key columns cannot be dropped, renamed or retyped; new columns are nullable; a type
may only widen (a wider integer, ``float`` → ``double``, an integer → a floating type, a wider decimal, a
longer string or binary, anything → ``string``); a column cannot become NOT NULL. Data files keep the schema
they were written with; readers map their columns by field id and cast them to the current types
(``docs/schema-evolution.md``).

Example::

    from paimon_core import SchemaChange, Move
    catalog.alter_table("db.t", [
        SchemaChange.add_column("note", pa.string(), move=Move.after("note", "id")),
        SchemaChange.rename_column("amount", "total"),
        SchemaChange.update_column_type("qty", pa.int64()),
        SchemaChange.set_option("snapshot.num-retained.max", "20"),
    ])
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.errors import SchemaError
from paimon_core.schema import TableSchema, split_keys
from paimon_core.types import (
    MAX_LENGTH,
    BigIntType,
    BinaryType,
    CharType,
    DataField,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    from_arrow_type,
)

__all__ = ["Move", "SchemaChange", "apply_changes", "widening_refusal"]

TypeLike: TypeAlias = pa.DataType | DataType


def _paimon_type(data_type: TypeLike) -> DataType:
    return data_type if isinstance(data_type, DataType) else from_arrow_type(data_type, True)


def _single(field_name: str | Sequence[str]) -> str:
    """A top-level column name (pypaimon also takes a one-element path)."""
    if isinstance(field_name, str):
        return field_name
    if len(field_name) != 1:
        raise SchemaError(f"changes of nested fields ({'.'.join(field_name)}) are not supported")
    return field_name[0]


class MoveType(enum.Enum):
    FIRST = "FIRST"
    AFTER = "AFTER"
    BEFORE = "BEFORE"
    LAST = "LAST"


@dataclass(frozen=True)
class Move:
    """Where a column goes: ``Move.first("c")``, ``Move.after("c", "ref")``, ``Move.before(...)``, ``Move.last``."""

    field_name: str
    reference_field_name: str | None
    type: MoveType

    @staticmethod
    def first(field_name: str) -> Move:
        return Move(field_name, None, MoveType.FIRST)

    @staticmethod
    def after(field_name: str, reference_field_name: str) -> Move:
        return Move(field_name, reference_field_name, MoveType.AFTER)

    @staticmethod
    def before(field_name: str, reference_field_name: str) -> Move:
        return Move(field_name, reference_field_name, MoveType.BEFORE)

    @staticmethod
    def last(field_name: str) -> Move:
        return Move(field_name, None, MoveType.LAST)


@dataclass(frozen=True)
class SchemaChange:
    """One change; build it with the static constructors (``SchemaChange.add_column(...)``, ...)."""

    action: str
    field_name: str | None = None
    data_type: DataType | None = None
    text: str | None = None  # a comment, a new name, an option key
    value: str | None = None  # an option value
    flag: bool = False  # keep_nullability, or the new nullability
    move: Move | None = None

    @staticmethod
    def set_option(key: str, value: Any) -> SchemaChange:
        return SchemaChange("setOption", text=key, value=opts.Options.of({key: value})[key])

    @staticmethod
    def remove_option(key: str) -> SchemaChange:
        return SchemaChange("removeOption", text=key)

    @staticmethod
    def update_comment(comment: str | None) -> SchemaChange:
        return SchemaChange("updateComment", text=comment)

    @staticmethod
    def add_column(
        field_name: str | Sequence[str],
        data_type: TypeLike,
        comment: str | None = None,
        move: Move | None = None,
    ) -> SchemaChange:
        return SchemaChange("addColumn", _single(field_name), _paimon_type(data_type), comment, move=move)

    @staticmethod
    def rename_column(field_name: str | Sequence[str], new_name: str) -> SchemaChange:
        return SchemaChange("renameColumn", _single(field_name), text=new_name)

    @staticmethod
    def drop_column(field_name: str | Sequence[str]) -> SchemaChange:
        return SchemaChange("dropColumn", _single(field_name))

    @staticmethod
    def update_column_type(
        field_name: str | Sequence[str], new_data_type: TypeLike, keep_nullability: bool = False
    ) -> SchemaChange:
        return SchemaChange(
            "updateColumnType", _single(field_name), _paimon_type(new_data_type), flag=keep_nullability
        )

    @staticmethod
    def update_column_nullability(field_name: str | Sequence[str], new_nullability: bool) -> SchemaChange:
        return SchemaChange("updateColumnNullability", _single(field_name), flag=new_nullability)

    @staticmethod
    def update_column_comment(field_name: str | Sequence[str], comment: str | None) -> SchemaChange:
        return SchemaChange("updateColumnComment", _single(field_name), text=comment)

    @staticmethod
    def update_column_position(move: Move) -> SchemaChange:
        return SchemaChange("updateColumnPosition", move.field_name, move=move)


# --- applying ---------------------------------------------------------------------------------------------


def apply_changes(schema: TableSchema, changes: Sequence[SchemaChange]) -> TableSchema:
    """``schema`` with ``changes`` applied in order (its id unchanged; the schema manager assigns the next).

    Raises:
        SchemaError: a change is refused (the message says why).
        ConfigError: an option is unknown, malformed, immutable, changed in a way it may not change, or in
            conflict with another.
    """
    result = schema
    for change in changes:
        result = _APPLY[change.action](result, change)
    opts.Options.of(result.options).validate()
    options = opts.Options.of(result.options)
    opts.check_option_changes(opts.Options.of(schema.options), options)
    opts.check_consistency(options)
    result.bucket_keys()  # bucket keys must still name columns
    return result


def _field(schema: TableSchema, name: str | None) -> DataField:
    assert name is not None
    if name not in schema.field_names:
        raise SchemaError(f"column {name!r} does not exist; the table has {schema.field_names}")
    return schema.field_by_name(name)


def _not_a_key(schema: TableSchema, name: str, what: str) -> None:
    if name in schema.partition_keys:
        raise SchemaError(f"cannot {what} partition column {name!r}")
    if name in schema.primary_keys:
        raise SchemaError(f"cannot {what} primary-key column {name!r}")


def _replace_field(schema: TableSchema, name: str, new: DataField) -> TableSchema:
    return replace(schema, fields=tuple(new if f.name == name else f for f in schema.fields))


def _set_option(schema: TableSchema, change: SchemaChange) -> TableSchema:
    assert change.text is not None and change.value is not None
    return replace(schema, options={**schema.options, change.text: change.value})


def _remove_option(schema: TableSchema, change: SchemaChange) -> TableSchema:
    return replace(schema, options={k: v for k, v in schema.options.items() if k != change.text})


def _update_comment(schema: TableSchema, change: SchemaChange) -> TableSchema:
    return replace(schema, comment=change.text)


def _add_column(schema: TableSchema, change: SchemaChange) -> TableSchema:
    assert change.field_name is not None and change.data_type is not None
    added = schema.add_columns([(change.field_name, change.data_type, change.text)])
    return _move(added, change.move) if change.move is not None else added


def _rename_column(schema: TableSchema, change: SchemaChange) -> TableSchema:
    old = _field(schema, change.field_name)
    new_name = change.text
    if not new_name:
        raise SchemaError("a column needs a non-empty name")
    _not_a_key(schema, old.name, "rename")
    if new_name in schema.field_names:
        raise SchemaError(f"cannot rename {old.name!r} to {new_name!r}: that column exists")
    renamed = _replace_field(schema, old.name, replace(old, name=new_name))
    keys = [new_name if k == old.name else k for k in split_keys(schema.options.get("bucket-key"))]
    if keys:  # options that name columns follow the rename, as in Java
        renamed = replace(renamed, options={**renamed.options, "bucket-key": ",".join(keys)})
    return renamed


def _drop_column(schema: TableSchema, change: SchemaChange) -> TableSchema:
    old = _field(schema, change.field_name)
    _not_a_key(schema, old.name, "drop")
    if len(schema.fields) == 1:
        raise SchemaError(f"cannot drop {old.name!r}: it is the only column")
    return replace(schema, fields=tuple(f for f in schema.fields if f.name != old.name))


def _update_column_type(schema: TableSchema, change: SchemaChange) -> TableSchema:
    old = _field(schema, change.field_name)
    assert change.data_type is not None
    _not_a_key(schema, old.name, "change the type of")
    new_type = change.data_type.copy(old.type.nullable) if change.flag else change.data_type
    if not new_type.nullable and old.type.nullable:
        raise SchemaError(f"column {old.name!r} cannot become NOT NULL: existing rows may hold nulls")
    reason = widening_refusal(old.type, new_type)
    if reason:
        raise SchemaError(f"cannot change column {old.name!r} from {old.type} to {new_type}: {reason}")
    return _replace_field(schema, old.name, replace(old, type=new_type))


def _update_column_nullability(schema: TableSchema, change: SchemaChange) -> TableSchema:
    old = _field(schema, change.field_name)
    if not change.flag and old.type.nullable:
        raise SchemaError(f"column {old.name!r} cannot become NOT NULL: existing rows may hold nulls")
    if change.flag and old.name in schema.primary_keys:
        raise SchemaError(f"primary-key column {old.name!r} cannot become nullable")
    return _replace_field(schema, old.name, replace(old, type=old.type.copy(change.flag)))


def _update_column_comment(schema: TableSchema, change: SchemaChange) -> TableSchema:
    old = _field(schema, change.field_name)
    return _replace_field(schema, old.name, replace(old, description=change.text))


def _update_column_position(schema: TableSchema, change: SchemaChange) -> TableSchema:
    assert change.move is not None
    return _move(schema, change.move)


def _move(schema: TableSchema, move: Move) -> TableSchema:
    moving = _field(schema, move.field_name)
    rest = [f for f in schema.fields if f.name != moving.name]
    if move.type == MoveType.FIRST:
        index = 0
    elif move.type == MoveType.LAST:
        index = len(rest)
    else:
        if move.reference_field_name == moving.name:
            raise SchemaError(f"cannot move {moving.name!r} relative to itself")
        reference = _field(schema, move.reference_field_name)
        index = next(i for i, f in enumerate(rest) if f.name == reference.name)
        index += 1 if move.type == MoveType.AFTER else 0
    rest.insert(index, moving)
    return replace(schema, fields=tuple(rest))


_APPLY = {
    "setOption": _set_option,
    "removeOption": _remove_option,
    "updateComment": _update_comment,
    "addColumn": _add_column,
    "renameColumn": _rename_column,
    "dropColumn": _drop_column,
    "updateColumnType": _update_column_type,
    "updateColumnNullability": _update_column_nullability,
    "updateColumnComment": _update_column_comment,
    "updateColumnPosition": _update_column_position,
}

# --- which type changes widen -----------------------------------------------------------------------------

_INTEGERS: list[type[DataType]] = [TinyIntType, SmallIntType, IntType, BigIntType]


def widening_refusal(old: DataType, new: DataType) -> str | None:
    """None when every value of ``old`` is a value of ``new``; else why not."""
    old_kind, new_kind = type(old), type(new)
    if isinstance(new, VarCharType) and new.length >= MAX_LENGTH:
        return None  # anything reads as its text
    if old_kind in _INTEGERS and new_kind in _INTEGERS:
        if _INTEGERS.index(new_kind) >= _INTEGERS.index(old_kind):
            return None
        return "a narrower integer would overflow"
    if old_kind in _INTEGERS and new_kind in (FloatType, DoubleType):
        return None
    if old_kind is FloatType and new_kind is DoubleType:
        return None
    if old_kind is new_kind and old_kind in (FloatType, DoubleType):
        return None
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        if new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale:
            return None
        return "the new decimal cannot hold every value of the old one"
    if isinstance(old, (CharType, VarCharType)) and isinstance(new, (CharType, VarCharType)):
        if new.length >= old.length and not (isinstance(new, CharType) and isinstance(old, VarCharType)):
            return None
        return "strings would be truncated"
    if isinstance(old, (BinaryType, VarBinaryType)) and isinstance(new, VarBinaryType):
        return None if new.length >= old.length else "bytes would be truncated"
    if old.copy(True) == new.copy(True):
        return None  # only nullability changed
    return "only widening type changes are allowed"
