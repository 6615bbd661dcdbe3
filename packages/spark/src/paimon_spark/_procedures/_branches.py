"""Branch procedures for Spark SQL users, as Python UDTFs with Paimon's argument names (see
:mod:`._maintenance`)::

    SELECT * FROM paimon_create_branch(table => 'db.t', branch => 'b1', tag => 'v1')
    SELECT * FROM paimon_delete_branch(table => 'db.t', branch => 'b1,b2')
    SELECT * FROM paimon_fast_forward(table => 'db.t', branch => 'b1')

Each also takes ``options`` (``'warehouse=/wh,k=v'``) and returns one row ``result``: true.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from paimon_core.maintenance import create_branch, delete_branch, fast_forward
from paimon_spark._procedures._udtf import TableProcedure, non_blank

__all__ = ["BRANCH_PROCEDURES"]


class CreateBranchProcedure(TableProcedure):
    def eval(
        self,
        table: str,
        branch: str,
        tag: str | None = None,
        ignore_if_exists: bool | None = None,
        options: str | None = None,
    ) -> Iterator[tuple[bool]]:
        create_branch(
            self._open(table, options), branch, non_blank(tag), ignore_if_exists=bool(ignore_if_exists)
        )
        yield (True,)


class DeleteBranchProcedure(TableProcedure):
    def eval(self, table: str, branch: str, options: str | None = None) -> Iterator[tuple[bool]]:
        delete_branch(self._open(table, options), branch)
        yield (True,)


class FastForwardProcedure(TableProcedure):
    def eval(self, table: str, branch: str, options: str | None = None) -> Iterator[tuple[bool]]:
        fast_forward(self._open(table, options), branch)
        yield (True,)


BRANCH_PROCEDURES: Mapping[str, tuple[type[TableProcedure], str]] = {
    "paimon_create_branch": (CreateBranchProcedure, "result boolean"),
    "paimon_delete_branch": (DeleteBranchProcedure, "result boolean"),
    "paimon_fast_forward": (FastForwardProcedure, "result boolean"),
}
"""UDTF name -> (class, return schema); :func:`paimon_spark.register_procedures` registers each."""
