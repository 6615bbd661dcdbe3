"""Partition filters of compaction jobs, in Paimon's procedure syntax.

``"dt=2024-01-01,hh=10;dt=2024-01-02"`` means ``(dt = 2024-01-01 AND hh = 10) OR dt = 2024-01-02``:
``,`` joins conditions of one partition spec, ``;`` separates specs. The CLI's repeated ``--partition``
flags are specs too. Values are strings compared with the partition's values after conversion to the
column type (``partition.default-name`` matches a null value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core import options as opts
from paimon_core.errors import ConfigError, SchemaError
from paimon_core.predicate import Predicate, parse_filter

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["PartitionFilter", "parse_partition_specs"]

PartitionSpecs = str | Mapping[str, Any] | Sequence[str | Mapping[str, Any]] | None


def _parse_spec(text: str) -> dict[str, str]:
    spec: dict[str, str] = {}
    for condition in text.split(","):
        condition = condition.strip()
        if not condition:
            continue
        key, sep, value = condition.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"invalid partition condition {condition!r}: expected key=value")
        spec[key.strip()] = value.strip()
    if not spec:
        raise ConfigError(f"empty partition spec {text!r}")
    return spec


def parse_partition_specs(specs: PartitionSpecs) -> list[dict[str, Any]]:
    """Normalize the accepted forms into a list of specs (OR of ANDs); empty = every partition."""
    if specs is None:
        return []
    if isinstance(specs, str):
        return [_parse_spec(part) for part in specs.split(";") if part.strip()]
    if isinstance(specs, Mapping):
        return [dict(specs)]
    result: list[dict[str, Any]] = []
    for spec in specs:
        result.extend(parse_partition_specs(spec))
    return result


@dataclass(frozen=True)
class PartitionFilter:
    """Accepts partitions matching any of ``specs``; built for one table by :meth:`of`."""

    specs: tuple[tuple[tuple[str, Any], ...], ...]
    default_name: str

    @classmethod
    def of(cls, table: TableStore, specs: PartitionSpecs) -> PartitionFilter | None:
        """The filter for ``table``, or None when ``specs`` is empty (every partition).

        Raises:
            SchemaError: a spec names a column that is not a partition key, or a value does not convert.
        """
        parsed = parse_partition_specs(specs)
        if not parsed:
            return None
        types = {f.name: f.type for f in table.arrow_schema}
        default_name = table.options.get_option(opts.PARTITION_DEFAULT_NAME)
        converted = []
        for spec in parsed:
            unknown = [k for k in spec if k not in table.partition_keys]
            if unknown:
                raise SchemaError(f"partition filter names non-partition columns: {', '.join(unknown)}")
            converted.append(tuple((k, _convert(v, types[k], default_name)) for k, v in spec.items()))
        return cls(tuple(converted), default_name)

    def __call__(self, values: Mapping[str, Any]) -> bool:
        return any(all(values.get(k) == v for k, v in spec) for spec in self.specs)

    def predicate(self) -> Predicate | None:
        """The same filter as a predicate, for manifest pruning (None when a spec matches nulls)."""
        dnf = []
        for spec in self.specs:
            if any(v is None for _, v in spec):
                return None
            dnf.append([(k, "=", v) for k, v in spec])
        return parse_filter(dnf)[0]


def _convert(value: Any, arrow_type: pa.DataType, default_name: str) -> Any:
    if value is None or (isinstance(value, str) and value == default_name):
        return None
    if not isinstance(value, str):
        return value
    try:
        return pa.array([value]).cast(arrow_type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(f"partition value {value!r} does not convert to {arrow_type}: {exc}") from None
