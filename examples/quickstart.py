"""Quickstart: a small pipeline on a local Paimon warehouse.

Creates a partitioned append table, commits several snapshots (appends from two writers and a partition
overwrite), reads it back with filters and time travel, and prints what it did. Run it with
``./dev quickstart`` (or ``python examples/quickstart.py [warehouse]`` with paimon-core installed).
"""

from __future__ import annotations

import datetime as dt
import random
import sys
import tempfile

import pyarrow as pa

from paimon_core import Catalog

SCHEMA = pa.schema(
    [
        pa.field("order_id", pa.int64(), nullable=False),
        pa.field("day", pa.date32(), nullable=False),
        pa.field("customer", pa.string()),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("created_at", pa.timestamp("us")),
    ]
)


def orders(first_id: int, count: int, day: dt.date, rng: random.Random) -> pa.Table:
    from decimal import Decimal

    return pa.table(
        {
            "order_id": list(range(first_id, first_id + count)),
            "day": [day] * count,
            "customer": [rng.choice(["ada", "grace", "linus", "barbara"]) for _ in range(count)],
            "amount": [Decimal(rng.randint(100, 99_999)) / 100 for _ in range(count)],
            "created_at": [
                dt.datetime.combine(day, dt.time(9)) + dt.timedelta(seconds=i) for i in range(count)
            ],
        },
        schema=SCHEMA,
    )


def main(warehouse: str) -> None:
    rng = random.Random(7)
    catalog = Catalog.open(warehouse, create=True)
    catalog.create_database("shop", exist_ok=True)
    catalog.drop_table("shop.orders", missing_ok=True)
    table = catalog.create_table(
        "shop.orders", SCHEMA, partition_keys=["day"], options={"file.compression": "zstd"}
    )
    print(f"warehouse {warehouse}: created {table.identifier}")

    days = [dt.date(2024, 5, 1) + dt.timedelta(days=i) for i in range(3)]
    next_id = 0
    for day in days:
        snapshot = table.append(orders(next_id, 1000, day, rng))
        next_id += 1000
        print(f"  snapshot {snapshot}: appended 1000 orders for {day}")

    # Two writers, one commit: engines write files in parallel and commit once.
    writers = [table.new_write(), table.new_write()]
    for writer in writers:
        writer.write(orders(next_id, 500, days[-1], rng))
        next_id += 500
    messages = [m for w in writers for m in w.prepare_commit()]
    (snapshot,) = table.new_commit("quickstart-job").commit(messages)
    print(f"  snapshot {snapshot}: two writers' files committed at once")

    corrected = orders(10_000, 200, days[0], rng)
    snapshot = table.overwrite(corrected, partition={"day": days[0]})
    print(f"  snapshot {snapshot}: overwrote partition day={days[0]} with 200 corrected orders")

    full = table.to_arrow()
    print(f"read back: {full.num_rows} rows in {len(table.live_entries())} files")
    one_day = table.to_arrow(columns=["order_id", "amount"], filter=[("day", "=", days[1])])
    print(f"day={days[1]}: {one_day.num_rows} rows (partition pruned)")
    big = table.to_arrow(filter=[("amount", ">", 900)])
    print(f"orders over 900: {big.num_rows}")
    before = table.to_arrow(snapshot_id=1)
    print(f"time travel to snapshot 1: {before.num_rows} rows")
    for s in table.snapshots():
        print(
            f"  #{s.id} {s.commit_kind.value:<9} total={s.total_record_count} delta={s.delta_record_count:+}"
        )

    expected = 1000 * 2 + 1000 + 200
    if full.num_rows != expected or before.num_rows != 1000:
        raise SystemExit(f"unexpected row counts: {full.num_rows} (want {expected}), {before.num_rows}")
    print("quickstart OK")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="paimon-quickstart-"))
