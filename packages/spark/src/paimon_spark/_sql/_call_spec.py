"""The shape of a ``CALL`` procedure: its arguments (:class:`Param`), the call being run (:class:`Call`) and
the procedure (:class:`Procedure`); :mod:`._call` and :mod:`._call_lifecycle` declare procedures with them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from paimon_core.table import Table
from paimon_spark._options import parse_options
from paimon_spark._sql._context import Context
from paimon_spark._sql._names import CatalogConf, PaimonName

__all__ = ["Call", "Param", "Procedure"]


@dataclass(frozen=True)
class Param:
    """An argument: its Spark name and type (``str``, ``int``, ``bool``), other names it is known by."""

    name: str
    kind: type = str
    required: bool = False
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call:
    """A procedure call being run: its context, catalog and arguments by Spark name."""

    ctx: Context
    catalog: CatalogConf
    args: dict[str, Any]

    def get(self, name: str) -> Any:
        return self.args.get(name)

    def text(self, name: str) -> str | None:
        value = self.args.get(name)
        return value if isinstance(value, str) and value.strip() else None

    def name_of(self, identifier: str) -> PaimonName:
        """A ``table`` argument: ``db.t``, or ``t`` in the current (else ``default``) database."""
        database, _, table = identifier.rpartition(".")
        return PaimonName(self.catalog, database or self.ctx.resolver.database_in(self.catalog), table)

    def table(self, name: str = "table") -> Table:
        dynamic = parse_options(self.text("options"))
        return self.ctx.open(self.name_of(self.args[name]), **dynamic)

    def refuse(self, *names: str) -> None:
        """Arguments of Paimon's procedure that this project does not implement: an error when given."""
        given = [n for n in names if self.args.get(n) not in (None, "")]
        if given:
            raise self.ctx.error(f"argument {', '.join(given)} is not supported here")


@dataclass(frozen=True)
class Procedure:
    name: str
    params: tuple[Param, ...]
    schema: str  # the result's columns, in Spark's DDL
    run: Callable[[Call], list[tuple[Any, ...]]]
    flink: bool = False  # one of Flink's names for a Spark procedure
    named_only: tuple[Param, ...] = field(default=())  # accepted by name only (another engine's extra)
