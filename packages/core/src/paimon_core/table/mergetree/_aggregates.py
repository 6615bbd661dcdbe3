"""Aggregate functions of primary-key tables (Paimon's ``fields.<c>.aggregate-function``).

Each function folds one column over the ordered records of every key group at once: picks by numpy index
arithmetic (``last_value``, ``first_value``, ...), Arrow hash aggregates over (group, value) tables (``sum``,
``min``, ``listagg``, ...) or, for nested values, one pass over the rows in order (``collect``, ``merge_map``).
Retractions (``-U``/``-D``) call the function's retract where Paimon has one. In a partial-update sequence
group, an add older than the group's stored sequence folds in from the other side (Java's ``aggReversed``:
it goes before what is accumulated), see docs/primary-key-tables.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import ConfigError, MergeError
from paimon_core.options import close_matches
from paimon_core.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarCharType,
    to_arrow_type,
)

__all__ = ["FUNCTIONS", "Aggregator", "aggregator_for", "first_where", "last_where", "take_or_null"]

Indices = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


class _Seeded(NamedTuple):
    """The rows of a fold that starts from seeds (see :meth:`Aggregator.aggregate`)."""

    adds: Mask
    retracts: Mask
    backward: Mask
    seeds: Mask
    called: Mask  # seeds whose function was called before them (Java's state survives a removal)


_NUMERIC = (TinyIntType, SmallIntType, IntType, BigIntType, FloatType, DoubleType, DecimalType)
_COMPARABLE = (*_NUMERIC, CharType, VarCharType, DateType, TimeType, TimestampType, LocalZonedTimestampType)
_STRING = (CharType, VarCharType)

# name -> (accepted types (None: any), can retract)
FUNCTIONS: dict[str, tuple[tuple[type[DataType], ...] | None, bool]] = {
    "sum": (_NUMERIC, True),
    "product": (_NUMERIC, True),
    "max": (_COMPARABLE, False),
    "min": (_COMPARABLE, False),
    "last_value": (None, True),
    "last_non_null_value": (None, True),
    "first_value": (None, False),
    "first_non_null_value": (None, False),
    "listagg": (_STRING, False),
    "bool_and": ((BooleanType,), False),
    "bool_or": ((BooleanType,), False),
    "collect": ((ArrayType,), True),
    "merge_map": ((MapType,), True),
}
_ALIASES = {"first_not_null_value": "first_non_null_value"}


def last_where(groups: Indices, mask: Mask, count: int) -> Indices:
    """For each group (ids non-decreasing), the index of its last row where ``mask`` holds (-1 if none)."""
    result = np.full(count, -1, dtype=np.int64)
    rows = np.nonzero(mask)[0]
    if len(rows):
        owners = groups[rows]
        ends = np.r_[owners[1:] != owners[:-1], True]
        result[owners[ends]] = rows[ends]
    return result


def first_where(groups: Indices, mask: Mask, count: int) -> Indices:
    """For each group, the index of its first row where ``mask`` holds (-1 if none)."""
    result = np.full(count, -1, dtype=np.int64)
    rows = np.nonzero(mask)[0]
    if len(rows):
        owners = groups[rows]
        starts = np.r_[True, owners[1:] != owners[:-1]]
        result[owners[starts]] = rows[starts]
    return result


def take_or_null(column: pa.ChunkedArray | pa.Array, indices: Indices) -> pa.Array:
    """``column`` at ``indices``; -1 gives null."""
    taken = pc.take(column, pa.array(indices, mask=indices < 0))
    return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken


def _valid(column: pa.ChunkedArray | pa.Array) -> Mask:
    valid: Mask = pc.is_valid(column).to_numpy(zero_copy_only=False)
    return valid


@dataclass(frozen=True)
class Aggregator:
    """One column's aggregate function."""

    column: str
    function: str
    data_type: DataType
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False

    @property
    def arrow_type(self) -> pa.DataType:
        return to_arrow_type(self.data_type)

    def aggregate(
        self,
        column: pa.ChunkedArray,
        groups: Indices,
        count: int,
        considered: Mask,
        retract: Mask,
        backward: Mask | None = None,
        seeds: Mask | None = None,
        called: Mask | None = None,
    ) -> pa.Array:
        """The folded value of every group (``considered`` rows only; ``retract`` marks -U/-D rows;
        ``backward`` marks adds that fold in before the accumulated value, in a sequence group; ``seeds``
        marks adds whose value becomes the accumulator as it is, as Java's partial update does with a
        leading retraction or a removing -D; ``called``: those seeds the function was called before)."""
        adds = considered & ~retract
        retracts = considered & retract
        if retracts.any() and not FUNCTIONS[self.function][1]:
            if not self.ignore_retract:
                raise MergeError(
                    f"aggregate function {self.function!r} of column {self.column!r} cannot retract -U/-D "
                    f"records; set 'fields.{self.column}.ignore-retract' = 'true' to skip them"
                )
            retracts = np.zeros_like(retracts)
        elif self.ignore_retract:
            retracts = np.zeros_like(retracts)
        back = np.zeros_like(adds) if backward is None else backward & adds
        seeded = np.zeros_like(adds) if seeds is None else seeds & adds
        implementation = _IMPLEMENTATIONS[self.function]
        if seeded.any() and implementation in _SEEDED:
            earlier = np.zeros_like(adds) if called is None else called & seeded
            fold = _Seeded(adds, retracts, back, seeded, earlier)
            return _SEEDED[implementation](self, column, groups, count, fold)
        return implementation(self, column, groups, count, adds, retracts, back)


# Each implementation: (aggregator, column, groups, count, adds, retracts, backward) -> one value per group.
# ``backward`` is a subset of ``adds``; functions whose result does not depend on the order ignore it.


def _last_value(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
) -> pa.Array:
    # An add from behind never replaces what is there (aggReversed keeps the accumulator).
    last = last_where(groups, (adds & ~backward) | retracts, count)
    return take_or_null(column, np.where((last >= 0) & retracts[np.maximum(last, 0)], -1, last))


def _last_non_null(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
) -> pa.Array:
    valid = _valid(column)
    forward = adds & ~backward
    last = last_where(groups, (forward | retracts) & valid, count)
    chosen = np.where((last >= 0) & forward[np.maximum(last, 0)], last, -1)
    if backward.any():
        # An add from behind fills the value only while it is null: the first such one after the last
        # retraction that cleared it (or from the start).
        after = np.arange(len(groups)) > last[groups]
        fill = first_where(groups, backward & valid & after, count)
        chosen = np.where(chosen >= 0, chosen, fill)
    return take_or_null(column, chosen)


def _first_value(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
) -> pa.Array:
    return take_or_null(column, _first_value_rows(groups, count, adds, backward))


def _first_value_rows(groups: Indices, count: int, adds: Mask, backward: Mask) -> Indices:
    """The row whose value first_value ends with, -1 where it keeps the accumulator it started from."""
    first = first_where(groups, adds, count)
    if not backward.any():
        return first
    # Java's first_value keeps what its first call returned, except that an add from behind replaces it
    # (it is earlier); a first call from behind returns the accumulator.
    chosen = np.where((first >= 0) & ~backward[np.maximum(first, 0)], first, -1)
    replaced = last_where(groups, backward & (np.arange(len(groups)) > first[groups]), count)
    return np.where(replaced >= 0, replaced, chosen)


def _first_value_seeded(agg: Aggregator, column: Any, groups: Indices, count: int, fold: _Seeded) -> pa.Array:
    # A seed is the accumulator of a function not called yet, so the first add still decides; once called,
    # the function keeps it as if it had returned it.
    fresh = fold.seeds & ~fold.called
    chosen = _first_value_rows(groups, count, fold.adds & ~fresh, fold.backward)
    return take_or_null(column, np.where(chosen >= 0, chosen, first_where(groups, fresh, count)))


def _first_non_null(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
) -> pa.Array:
    valid = _valid(column)
    if not backward.any():
        return take_or_null(column, first_where(groups, adds & valid, count))
    return take_or_null(
        column, _first_non_null_with_backward(groups, count, adds & ~backward, backward, valid)
    )


def _first_non_null_seeded(
    agg: Aggregator, column: Any, groups: Indices, count: int, fold: _Seeded
) -> pa.Array:
    # A non-null seed is held as a non-null value from behind is, until something settles or replaces it;
    # a null one is no value at all.
    valid = _valid(column)
    fresh = fold.seeds & ~fold.called  # a called one folds in as a first add: see docs/primary-key-tables.md
    forward = fold.adds & ~fold.backward & ~fresh
    behind = fold.backward | (fresh & valid)
    return take_or_null(column, _first_non_null_with_backward(groups, count, forward, behind, valid))


def _first_non_null_with_backward(
    groups: Indices, count: int, forward: Mask, backward: Mask, valid: Mask
) -> Indices:
    """Java's first_non_null_value when adds come from behind, step for step: a forward non-null sets the
    value once; from behind, an add sets the value (even to null) unless one set before it is non-null
    and not yet settled, in which case it settles it."""
    positions = np.arange(len(groups))
    first_forward = first_where(groups, forward & valid, count)
    first_back = first_where(groups, backward & valid, count)
    none = len(groups)
    f = np.where(first_forward >= 0, first_forward, none)
    b = np.where(first_back >= 0, first_back, none)
    # A non-null from behind first: the value until the next add from behind (which settles it) or the
    # next forward non-null (which replaces and settles it).
    next_back = first_where(groups, backward & (positions > b[groups]), count)
    next_back = np.where(next_back >= 0, next_back, none)
    back_first = b < f
    settled_at = np.where(back_first, np.minimum(next_back, f), f)
    value = np.where(back_first & (next_back < f), b, f)
    value = np.where(back_first & (settled_at == none), b, value)
    # Once settled, every later add from behind sets the value.
    later = last_where(groups, backward & (positions > settled_at[groups]), count)
    chosen = np.where(later >= 0, later, value)
    return np.where(chosen == none, -1, chosen)


def _hash_aggregate(
    column: Any,
    groups: Indices,
    count: int,
    rows: Indices,
    function: str,
    options: Any = None,
    values: Any = None,
) -> pa.Array:
    """Arrow's hash aggregate ``function`` of the given rows (in that order) per group; groups without rows
    are null."""
    data = values if values is not None else pc.take(column, pa.array(rows))
    table = pa.table({"g": pa.array(groups[rows]), "v": data})
    grouped = table.group_by("g", use_threads=False).aggregate([("v", function, options)])
    where = np.full(count, -1, dtype=np.int64)
    where[grouped.column("g").to_numpy()] = np.arange(grouped.num_rows)
    return take_or_null(grouped.column(f"v_{function}"), where)


_MIN_ONE = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)


def _sum(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
) -> pa.Array:
    picked = np.flatnonzero(adds | retracts)
    taken = values = pc.take(column, pa.array(picked))
    if retracts.any():
        values = pc.if_else(pa.array(retracts[picked]), pc.negate(values), values)
    summed = _hash_aggregate(column, groups, count, picked, "sum", _MIN_ONE, values)
    if pa.types.is_integer(agg.arrow_type):
        _check_exact(agg, "sum", taken, groups, count, picked, retracts)
    return pc.cast(summed, agg.arrow_type, safe=False)  # in range: _check_exact raised otherwise


def _simple(function: str) -> Callable[..., pa.Array]:
    def aggregate(
        agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
    ) -> pa.Array:
        result = _hash_aggregate(column, groups, count, np.flatnonzero(adds), function, _MIN_ONE)
        return pc.cast(result, agg.arrow_type, safe=False)

    return aggregate


def _product(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
) -> pa.Array:
    if not retracts.any():
        picked = np.flatnonzero(adds)
        taken = pc.take(column, pa.array(picked))
        if pa.types.is_integer(agg.arrow_type):
            _check_exact(agg, "product", taken, groups, count, picked, retracts)
        product = _hash_aggregate(column, groups, count, picked, "product", _MIN_ONE, taken)
        return pc.cast(product, agg.arrow_type, safe=False)  # in range: _check_exact raised otherwise
    # A retraction divides (integers truncating, as Java's): the order matters, so groups with one are
    # folded record by record.
    folded: list[Any] = [None] * count
    touched = np.unique(groups[retracts])
    rows = np.flatnonzero(np.isin(groups, touched) & (adds | retracts) & _valid(column))
    untouched = adds & ~np.isin(groups, touched)
    if untouched.any():
        folded = _product(
            agg, column, groups, count, untouched, np.zeros_like(retracts), backward
        ).to_pylist()
        for group in touched:
            folded[group] = None
    for row, value in zip(rows, pc.take(column, pa.array(rows)).to_pylist(), strict=True):
        group = int(groups[row])
        current = folded[group]
        if not retracts[row]:
            folded[group] = value if current is None else _multiplied(current, value, agg)
        elif current is not None:  # retracting from nothing leaves nothing
            folded[group] = _divided(current, value, agg)
    return pa.array(folded, agg.arrow_type)


def _in_range(value: Any, agg: Aggregator) -> Any:
    """``value``, when ``agg``'s integer type holds it; Java's exact arithmetic throws otherwise."""
    arrow_type = agg.arrow_type
    if pa.types.is_integer(arrow_type) and not -(1 << (arrow_type.bit_width - 1)) <= value < (
        1 << (arrow_type.bit_width - 1)
    ):
        raise MergeError(
            f"aggregate function {agg.function!r} of column {agg.column!r} overflows {arrow_type} "
            f"(Paimon's integer aggregates do not wrap)"
        )
    return value


def _added(current: Any, value: Any, retract: bool, agg: Aggregator) -> Any:
    signed = -value if retract else value
    return _in_range(signed if current is None else current + signed, agg)


def _multiplied(current: Any, value: Any, agg: Aggregator) -> Any:
    return _in_range(current * value, agg)


def _check_exact(
    agg: Aggregator,
    function: str,
    taken: Any,
    groups: Indices,
    count: int,
    picked: Indices,
    retracts: Mask,
) -> None:
    """Raise where the integer ``function`` (sum or product) of a group's ``picked`` rows (their values
    ``taken``, in order) leaves the type on the way, as Java's ``addExact``/``multiplyExact`` do. Only groups
    whose magnitudes could add (or multiply) up to the type's limit are folded step by step; for the others
    no partial result can reach it."""
    if not len(picked):
        return
    magnitudes = pc.abs(pc.cast(taken, pa.float64(), safe=False))
    limit = float(1 << (agg.arrow_type.bit_width - 2))  # half the type's range: float rounding is far below
    if function == "product":  # zeros end a product; the others have |x| >= 1: partials stay below the total
        magnitudes = pc.if_else(pc.equal(magnitudes, 0.0), 1.0, magnitudes)
    elif (pc.sum(magnitudes).as_py() or 0.0) < limit:  # not even all the rows together come near
        return
    bounds = _hash_aggregate(None, groups, count, picked, function, _MIN_ONE, magnitudes)
    near = pc.fill_null(pc.greater_equal(bounds, limit), False).to_numpy(zero_copy_only=False)
    if not near.any():
        return
    chosen = near[groups[picked]]
    folded: dict[int, Any] = {}
    for row, value in zip(picked[chosen].tolist(), taken.filter(pa.array(chosen)).to_pylist(), strict=True):
        if value is None:
            continue
        group = int(groups[row])
        current = folded.get(group)
        if function == "product":
            folded[group] = value if current is None else _multiplied(current, value, agg)
        else:
            folded[group] = _added(current, value, bool(retracts[row]), agg)


def _divided(current: Any, divisor: Any, agg: Aggregator) -> Any:
    if pa.types.is_integer(agg.arrow_type):
        if divisor == 0:
            raise MergeError(f"aggregate function 'product' of column {agg.column!r} cannot retract a zero")
        quotient = abs(current) // abs(divisor)  # truncated toward zero
        return _in_range(quotient if (current < 0) == (divisor < 0) else -quotient, agg)
    if pa.types.is_decimal(agg.arrow_type):
        if divisor == 0:
            raise MergeError(f"aggregate function 'product' of column {agg.column!r} cannot retract a zero")
        return (current / divisor).quantize(Decimal(1).scaleb(-agg.arrow_type.scale), ROUND_HALF_UP)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(current) / np.float64(divisor))  # IEEE: x / 0 is infinite, 0 / 0 NaN


def _in_fold_order(groups: Indices, rows: Mask, backward: Mask) -> Indices:
    """The chosen rows group by group, in the order a fold leaves their values: adds from behind go
    before everything accumulated so far (the later, the further in front), the others after it."""
    picked = np.flatnonzero(rows)
    if not backward[picked].any():
        return picked
    position = np.where(backward[picked], -(picked + 1), picked + 1)
    return picked[np.lexsort((position, groups[picked]))]


def _blank(column: Any) -> Mask:
    """Null, empty or whitespace-only strings: what Java's listagg skips."""
    text = pc.fill_null(column, "")
    blank = pc.or_(pc.equal(pc.utf8_length(text), 0), pc.utf8_is_space(text))
    result: Mask = blank.to_numpy(zero_copy_only=False)
    return result


def _listagg(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
) -> pa.Array:
    rows = _in_fold_order(groups, adds & ~_blank(column), backward)
    lists = _hash_aggregate(column, groups, count, rows, "list")
    if not agg.distinct:
        joined = pc.cast(pc.binary_join(lists, agg.delimiter), agg.arrow_type)
    else:
        joined = pa.array(
            [_distinct_join(items, agg.delimiter) for items in lists.to_pylist()], agg.arrow_type
        )
    if not backward.any():
        return joined
    # Without a value that is not blank, an add from behind replaces what is there (Java's aggReversed
    # returns the older value when the accumulator is blank), blank or null as it may be.
    blank_from_behind = take_or_null(column, last_where(groups, backward, count))
    return pc.if_else(pc.is_null(joined), blank_from_behind, joined)


def _listagg_seeded(agg: Aggregator, column: Any, groups: Indices, count: int, fold: _Seeded) -> pa.Array:
    # A seed that is not blank folds in as the first value; a blank one stays until a value that is not
    # blank comes, or one from behind replaces it.
    joined = _listagg(agg, column, groups, count, fold.adds, fold.retracts, fold.backward)
    blank_seed = take_or_null(column, last_where(groups, fold.backward | fold.seeds, count))
    return pc.if_else(pc.is_null(joined), blank_seed, joined)


def _distinct_join(items: list[str] | None, delimiter: str) -> str | None:
    """Java's distinct listagg: the first value as it is, then each later value's tokens that are neither
    blank nor seen before."""
    if not items:
        return None
    joined = items[0]
    seen = set(_tokens(joined, delimiter))
    for item in items[1:]:
        for token in _tokens(item, delimiter):
            if token.strip() and token not in seen:
                seen.add(token)
                joined += delimiter + token
    return joined


def _tokens(text: str, delimiter: str) -> list[str]:
    # An empty delimiter splits on whitespace, as Java's splitByWholeSeparatorPreserveAllTokens does.
    return text.split(delimiter) if delimiter else text.split()


def _collect(
    agg: Aggregator,
    column: Any,
    groups: Indices,
    count: int,
    adds: Mask,
    retracts: Mask,
    backward: Mask,
    seeds: Mask | None = None,
) -> pa.Array:
    valid = _valid(column)
    # A distinct collect deduplicates its accumulator on every add, a null one included: a seed keeps
    # its repeats only until then.
    nulls_too = agg.distinct and seeds is not None
    rows = np.flatnonzero(((adds | retracts) & valid) | (adds & nulls_too))
    # Java's collect appends adds from behind too, unless ignore-retract wraps it (the wrapper prepends).
    prepend = backward if agg.ignore_retract else np.zeros_like(backward)
    verbatim = np.zeros_like(adds) if seeds is None else seeds
    collected: list[list[Any] | None] = [None] * count
    for row, items in zip(rows, pc.take(column, pa.array(rows)).to_pylist(), strict=True):
        group = int(groups[row])
        current = collected[group]
        if retracts[row]:
            if current is not None:  # without an accumulator there is nothing to retract
                collected[group] = _without(current, items)
            continue
        if items is None:
            collected[group] = None if current is None else _distinct(current)
            continue
        merged = items if current is None else items + current if prepend[row] else current + items
        collected[group] = _distinct(merged) if agg.distinct and not verbatim[row] else merged
    return pa.array(collected, agg.arrow_type)


def _without(current: list[Any], retracted: list[Any]) -> list[Any]:
    """``current`` less one occurrence (the first) of each retracted element."""
    remaining = list(retracted)
    kept = []
    for value in current:
        if value in remaining:
            remaining.remove(value)
        else:
            kept.append(value)
    return kept


def _distinct(values: list[Any]) -> list[Any]:
    kept: list[Any] = []
    for value in values:
        if value not in kept:
            kept.append(value)
    return kept


def _merge_map(
    agg: Aggregator, column: Any, groups: Indices, count: int, adds: Mask, retracts: Mask, backward: Mask
) -> pa.Array:
    rows = np.nonzero((adds | retracts) & _valid(column))[0]
    maps: list[dict[Any, Any] | None] = [None] * count
    values = pc.take(column, pa.array(rows)).to_pylist()
    for row, pairs in zip(rows, values, strict=True):
        group = int(groups[row])
        current = maps[group]
        if retracts[row]:
            if current is not None:  # without an accumulator there is nothing to retract
                for key, _ in pairs:
                    current.pop(key, None)
        elif current is None:
            maps[group] = dict(pairs)
        elif backward[row]:  # from behind: the accumulated entries win
            maps[group] = {**dict(pairs), **current}
        else:
            current.update(pairs)
    return pa.array([None if m is None else list(m.items()) for m in maps], agg.arrow_type)


_IMPLEMENTATIONS: dict[str, Callable[..., pa.Array]] = {
    "sum": _sum,
    "product": _product,
    "max": _simple("max"),
    "min": _simple("min"),
    "bool_and": _simple("all"),
    "bool_or": _simple("any"),
    "last_value": _last_value,
    "last_non_null_value": _last_non_null,
    "first_value": _first_value,
    "first_non_null_value": _first_non_null,
    "listagg": _listagg,
    "collect": _collect,
    "merge_map": _merge_map,
}


# A seed acts as a first add for every function but these, whose Java state (first_value's "called
# before"), blank handling (listagg) or deduplication (collect distinct) tell the two apart.
_SEEDED: dict[Callable[..., pa.Array], Callable[..., pa.Array]] = {
    _first_value: _first_value_seeded,
    _first_non_null: _first_non_null_seeded,
    _listagg: _listagg_seeded,
    _collect: lambda agg, column, groups, count, fold: _collect(
        agg, column, groups, count, fold.adds, fold.retracts, fold.backward, fold.seeds
    ),
}


def aggregator_for(
    column: str,
    function: str,
    data_type: DataType,
    *,
    ignore_retract: bool = False,
    delimiter: str = ",",
    distinct: bool = False,
) -> Aggregator:
    """The aggregator of ``column``.

    Raises:
        ConfigError: an unknown function (naming close matches), or one that does not fit the column's type.
    """
    name = _ALIASES.get(function.strip().lower(), function.strip().lower())
    if name == "count":
        raise ConfigError(
            f"aggregate function 'count' for column {column!r}: Paimon removed it (0.9, apache/paimon#3932) "
            "because a count cannot be merged correctly; write 1 per row into the column and use 'sum'",
            f"fields.{column}.aggregate-function",
        )
    if name not in FUNCTIONS:
        raise ConfigError(
            f"unknown aggregate function {function!r} for column {column!r}"
            f"{close_matches(name, FUNCTIONS)}; Paimon's functions: {', '.join(sorted(FUNCTIONS))}",
            f"fields.{column}.aggregate-function",
        )
    accepted = FUNCTIONS[name][0]
    if accepted is not None and not isinstance(data_type, accepted):
        raise ConfigError(
            f"aggregate function {name!r} does not fit column {column!r} of type {data_type}",
            f"fields.{column}.aggregate-function",
        )
    return Aggregator(column, name, data_type, ignore_retract, delimiter, distinct)
