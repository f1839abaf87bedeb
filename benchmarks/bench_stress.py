"""Stress the embedded endpoint: 16 threads x 50 conditional increments vs one thread.

    python benchmarks/bench_stress.py [--threads 16] [--ops 50] [--backend embedded] [--processes]

Each operation is one attempt at a conditional increment — GetItem the counter, then
UpdateItem ``SET n = :new`` only if ``n = :old`` — so it either adds one or fails with
ConditionalCheckFailedException. Both runs do the same number of operations
(threads x ops); the single-thread run goes first. Then the same concurrent run without
the condition (GetItem + PutItem) shows the lost updates the condition prevents.

``--processes`` adds the concurrent run with one spawned process per worker (the
elapsed time then includes starting them).

Prints elapsed seconds, throughput (ops/s) and the concurrent/single throughput ratio.
Asserts only invariants: the counter equals the successes for the conditional op.
"""

from __future__ import annotations

import time
from typing import Any

import common

import labkit
from labkit.lab.invariants import lost_updates
from labkit.races import stress

KEY = {"PK": {"S": "BENCH#counter"}, "SK": {"S": "COUNTER"}}


def read(client: Any, table: str) -> int:
    item = client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]
    return int(item["n"]["N"])


class ConditionalIncrement:
    """One attempt: read n, then SET n = n+1 only if n is unchanged (picklable for --processes)."""

    def __init__(self, table: str) -> None:
        self.table = table

    def __call__(self, client: Any, worker: int, seq: int) -> int:
        n = read(client, self.table)
        client.update_item(
            TableName=self.table,
            Key=KEY,
            UpdateExpression="SET n = :new",
            ConditionExpression="n = :old",
            ExpressionAttributeValues={":new": {"N": str(n + 1)}, ":old": {"N": str(n)}},
        )
        return n + 1


def blind_increment(table: str) -> Any:
    def op(client: Any, worker: int, seq: int) -> int:
        n = read(client, table)
        client.put_item(TableName=table, Item={**KEY, "n": {"N": str(n + 1)}})
        return n + 1

    return op


def run(conn: labkit.Connection, op: Any, threads: int, ops: int, processes: bool = False) -> dict[str, Any]:
    table = conn.table_name
    conn.client.put_item(TableName=table, Item={**KEY, "n": {"N": "0"}})
    began = time.perf_counter()
    df = stress(op, conn=conn, threads=threads, ops=ops, processes=processes, progress=False)
    elapsed = time.perf_counter() - began
    successes = int(df["ok"].sum())
    final = read(conn.client, table)
    window = float(df["end"].max() - df["start"].min())  # from the barrier to the last op
    return {
        "window": window,
        "window_throughput": len(df) / window,
        "threads": threads,
        "ops": len(df),
        "elapsed": elapsed,
        "throughput": len(df) / elapsed,
        "successes": successes,
        "final": final,
        "calls": int(df["calls"].sum()),
        "lost": lost_updates(successes, final) if final <= successes else -1,
    }


def show(label: str, r: dict[str, Any]) -> None:
    print(
        f"{label:<36} {r['threads']:>3} threads {r['ops']:>4} ops  {r['elapsed']:6.2f} s  "
        f"{r['throughput']:6.1f} ops/s ({r['window_throughput']:6.1f} after the barrier)  "
        f"successes {r['successes']:>3}  final {r['final']:>3}  lost {r['lost']}"
    )


def main() -> None:
    parser = common.arguments(__doc__)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--ops", type=int, default=50, help="operations per thread")
    parser.add_argument(
        "--processes", action="store_true", help="also run the concurrent conditional increments as spawned processes"
    )
    args = parser.parse_args()

    conn = common.lab_table(args.backend, "labkit-bench-stress")
    print(conn.describe())
    total = args.threads * args.ops
    try:
        run(conn, ConditionalIncrement(conn.table_name), 2, 5)  # warm up clients and endpoint
        single = run(conn, ConditionalIncrement(conn.table_name), 1, total)
        show("conditional increment, single", single)
        many = run(conn, ConditionalIncrement(conn.table_name), args.threads, args.ops)
        show("conditional increment, concurrent", many)
        assert many["final"] == many["successes"], "a conditional increment was lost"
        if args.processes:
            procs = run(conn, ConditionalIncrement(conn.table_name), args.threads, args.ops, True)
            show("conditional increment, processes", procs)
            assert procs["final"] == procs["successes"], "a conditional increment was lost"
        blind = run(conn, blind_increment(conn.table_name), args.threads, args.ops)
        show("blind read-modify-write, concurrent", blind)
        print(f"throughput ratio concurrent/single: {many['throughput'] / single['throughput']:.2f}")
        print(
            f"conditional: {many['ops'] - many['successes']} of {many['ops']} attempts lost the "
            f"race and changed nothing; blind: {blind['lost']} updates silently lost"
        )
    finally:
        labkit.delete_table(conn)


if __name__ == "__main__":
    main()
