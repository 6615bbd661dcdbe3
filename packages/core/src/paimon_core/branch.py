"""Branches: named lines of history beside the table's own (docs/format.md#branches).

A branch ``b`` lives in ``<table>/branch/branch-b/`` with its own ``snapshot/``, ``schema/``, ``tag/`` and
``consumer/`` directories, as in Java Paimon. Data files, manifests and index files stay where the main
branch keeps them (``<table>/bucket-*``, ``<table>/manifest``, ``<table>/index``): a branch created from a
tag starts from the tag's snapshot and shares every file of it with the main branch.

A table handle reads and writes one branch, chosen by the ``branch`` option (``main`` by default) or by the
name ``db.t$branch_b``. This module owns the names and the directories; creating, deleting and
fast-forwarding branches are maintenance (:mod:`paimon_core.maintenance`).
"""

from __future__ import annotations

from paimon_core.errors import ConfigError
from paimon_core.storage import StorageBackend, join_path

__all__ = [
    "BRANCH_PREFIX",
    "MAIN_BRANCH",
    "SYSTEM_BRANCH_PREFIX",
    "BranchManager",
    "branch_path",
    "check_branch_name",
    "split_branch",
]

MAIN_BRANCH = "main"
BRANCH_PREFIX = "branch-"
SYSTEM_BRANCH_PREFIX = "branch_"
"""``db.t$branch_b``: the table name's suffix that names a branch (Java's ``Identifier``)."""

# Characters that would leave the branch directory, or make ``t$branch_b$snapshots`` and comma-separated
# lists of branches ambiguous. Java refuses none of them; its directory layout needs them refused.
_HOSTILE = frozenset('/\\$,:*?"<>|')


def normalize_branch(branch: str | None) -> str:
    """A blank branch is the main branch, as Java's ``BranchManager.normalizeBranch``."""
    return branch if branch is not None and branch.strip() else MAIN_BRANCH


def is_main(branch: str) -> bool:
    return branch == MAIN_BRANCH


def branch_path(table_path: str, branch: str) -> str:
    """The directory holding the metadata of ``branch``: the table's own for ``main``.

    Raises:
        ConfigError: a name :func:`check_branch_name` refuses (it could lead out of ``branch/``).
    """
    table_path = table_path.rstrip("/")
    if is_main(branch):
        return table_path
    return join_path(table_path, "branch", BRANCH_PREFIX + check_branch_name(branch))


def check_branch_name(name: str) -> str:
    """Java's rules (not ``main``, not blank, not only digits) and a safe directory name.

    Raises:
        ConfigError: the name is refused; the message says why.
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"branch name {name!r} is blank", "branch")
    if is_main(name):
        raise ConfigError(f"branch name {name!r} is the default branch and cannot be used", "branch")
    if name.isdigit():
        raise ConfigError(f"branch name cannot be a pure numeric string but is {name!r}", "branch")
    bad = sorted({c for c in name if c in _HOSTILE or not c.isprintable()})
    if bad or name in (".", "..") or name != name.strip():
        shown = ", ".join(repr(c) for c in bad) or "leading or trailing blanks, or a dot name"
        raise ConfigError(
            f"branch name {name!r} has characters a branch directory cannot have: {shown}", "branch"
        )
    return name


def split_branch(name: str) -> tuple[str, str | None]:
    """``"t$branch_b"`` → ``("t", "b")``; ``"t"`` → ``("t", None)`` (system-table suffixes removed first)."""
    base, splitter, suffix = name.partition("$")
    if splitter and suffix.lower().startswith(SYSTEM_BRANCH_PREFIX):
        return base, suffix[len(SYSTEM_BRANCH_PREFIX) :]
    return name, None


class BranchManager:
    """Lists the branches of one table directory (``<table>/branch/branch-<name>``)."""

    def __init__(self, storage: StorageBackend, table_path: str) -> None:
        self.storage = storage
        self.table_path = table_path.rstrip("/")
        self.branch_dir = join_path(self.table_path, "branch")

    def path(self, branch: str) -> str:
        return branch_path(self.table_path, branch)

    def names(self) -> list[str]:
        """Every branch, sorted (``main`` is not listed)."""
        try:
            infos = self.storage.list_dir(self.branch_dir)
        except FileNotFoundError:
            return []
        return sorted(
            i.name[len(BRANCH_PREFIX) :] for i in infos if i.is_dir and i.name.startswith(BRANCH_PREFIX)
        )

    def exists(self, branch: str) -> bool:
        if is_main(branch):
            return True
        try:
            return self.storage.info(self.path(branch)).is_dir
        except FileNotFoundError:
            return False

    def create_time_millis(self, branch: str) -> int:
        """When the branch directory was created (its modification time, as Java's ``$branches`` reads it)."""
        mtime = self.storage.info(self.path(branch)).mtime_ms
        if mtime:
            return mtime
        # object stores have no directories: the oldest schema file copied into the branch says it
        schemas = self.storage.list_dir(join_path(self.path(branch), "schema"))
        return min((i.mtime_ms for i in schemas if not i.is_dir), default=0)
