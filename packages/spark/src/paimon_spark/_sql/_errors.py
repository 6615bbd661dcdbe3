"""The errors of the SQL front: statements it cannot run, procedures it does not have."""

from __future__ import annotations

import difflib

from paimon_core.errors import PaimonError

__all__ = ["ProcedureNotFoundError", "ProcedureUnsupportedError", "SqlError"]


class SqlError(PaimonError, ValueError):
    """A Paimon statement that is malformed, or whose arguments do not fit what it names.

    Attributes:
        statement: the statement's text.
    """

    def __init__(self, message: str, statement: str | None = None) -> None:
        super().__init__(message)
        self.statement = statement


class ProcedureNotFoundError(SqlError, LookupError):
    """``CALL`` names a procedure the project does not have; ``known`` lists the ones it has (the message
    names the nearest)."""

    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean sys.{close[0]}?)" if close else ""
        super().__init__(f"no procedure sys.{name}{hint}; the procedures are {', '.join(sorted(known))}")
        self.name = name
        self.known = known


class ProcedureUnsupportedError(SqlError, NotImplementedError):
    """``CALL`` names one of Paimon's procedures that does not run here; ``reason`` says why (it needs a Hive
    metastore, a REST catalog, a table feature not supported here, or is not implemented yet)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"sys.{name} is one of Paimon's procedures, but it does not run here: {reason}")
        self.name = name
        self.reason = reason
