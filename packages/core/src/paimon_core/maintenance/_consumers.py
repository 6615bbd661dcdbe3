"""Consumer maintenance, as Paimon's: idle consumers expire (``consumer.expiration-time``) and
``clear_consumers`` deletes consumers by name.

A consumer's ``nextSnapshot`` keeps every later snapshot from expiring; a streaming reader that stopped for
good would keep them for ever. Java deletes, after each commit, the consumer files not written for
``consumer.expiration-time`` (their modification time), before it expires snapshots, so that the freed
snapshots go in the same round; :func:`expire_consumers` is that step.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from paimon_core import options as opts

if TYPE_CHECKING:
    from paimon_core.table import TableStore

__all__ = ["clear_consumers", "expire_consumers"]


def expire_consumers(table: TableStore, *, now_millis: int | None = None) -> list[str]:
    """Delete the consumers idle for longer than ``consumer.expiration-time`` (nothing when it is unset).

    A consumer is idle since its file was last written (each checkpoint of its reader rewrites it); a store
    that does not know a file's modification time keeps it.

    Args:
        table: the table.
        now_millis: the current time in epoch millis (default: the clock).

    Returns:
        The ids of the consumers deleted.
    """
    limit = table.options.get_option(opts.CONSUMER_EXPIRATION_TIME)
    if limit is None:
        return []
    now = now_millis if now_millis is not None else int(time.time() * 1000)
    return table.consumer_manager.expire(now - limit)


def clear_consumers(
    table: TableStore, including_consumers: str | None = None, excluding_consumers: str | None = None
) -> list[str]:
    """Paimon's ``clear_consumers``: delete the consumers whose id matches ``including_consumers`` (a regular
    expression matching whole ids; all consumers when None or blank) and not ``excluding_consumers``.

    Returns:
        The ids of the consumers deleted.

    Raises:
        ConfigError: a pattern is not a valid regular expression.
    """
    return table.consumer_manager.clear(including_consumers, excluding_consumers)
