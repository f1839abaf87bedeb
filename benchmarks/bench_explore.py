"""How many runs explore() needs: 3 read-modify-write actors x 3 calls, broken and fixed.

    python benchmarks/bench_explore.py [--backend embedded] [--seed 0] [--budget 2000] [--weak-only]

Each actor makes three DynamoDB calls:

    GetItem  the counter item                       (read, key COUNTER)
    write    the counter, computed from that read   (write, key COUNTER)
    PutItem  its own audit item AUDIT#<actor>       (write, a key nobody else touches)

*lost update*: the write is a PutItem of n + 1 — two actors that read the same n lose an update.
*version-guarded*: the write is ``SET n = :n1, v = :v1`` if ``v = :v`` (the version read); a loser
ends with ConditionalCheckFailedException (a DynamoDB outcome) and writes no audit item.
*version-guarded, retrying*: the loser re-reads and retries until its update lands.
*ADD*: ``ADD n :one`` — one call, nothing read.

Invariant for all: the counter equals the number of actors whose update landed (audit items).
Exhaustive search would run every order of the 9 calls: 9! / (3! 3! 3!) = 1,680.
Prints, per strategy, the runs needed (to find the lost update, or to prove the fix) and the
ratio to exhaustive search; the counterexample's replay is checked.

Then the speed: runs/s of explore proving the version-guarded 3 x 3 (DPOR), and the *floor* measured
in the same run — the same calls, ``setup()`` and the invariant made one after another by one
thread on one client, no gate — and their ratio (explore's cost per run over the floor's).

Then the cost of faults (``explore(..., faults=["lose-response", "transaction-conflict"])``: each
order also with one fault at each call point), runs needed with and without them:

* the 3 x 3 lost update and ADD (3 x 2 calls), invariant "every update an actor audited is in the counter"
  (a lost answer may apply an update nobody audited; a conflict applies nothing);
* the sign-up retry: two sign-ups (one TransactWriteItems each) that retry a lost answer with a
  new ClientRequestToken (found only with faults) or the same one (passes).

Last, the cost of DynamoDB's weak answers (``stale-read``, ``unprocessed-items``, ``short-page``;
embedded endpoint only): docs/ci.md's three cases, broken and fixed, one actor each, explored with
the two faults above and then with the weak answers added — runs needed with and without them:

* a read-back: UpdateItem, then a default GetItem (broken) / ``ConsistentRead=True`` / ``ReturnValues``;
* a batch import of 3 items: a raw ``batch_write_item`` that ignores ``UnprocessedItems`` / boto3's
  ``batch_writer``;
* a count of 3 items: one Query page / the paginator.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import common
from botocore.exceptions import ClientError, ReadTimeoutError

import labkit
from labkit.races import Exploration, Interleaving, explore, run_interleaving
from labkit.races.explore import count_orders
from tests.helpers import resource_table
from tests.races.counters import NAMES, Counter


def timed_explore(
    actors: Mapping[str, Callable[..., Any]],
    conn: Any,
    setup: Callable[[], None],
    invariant: Callable[[Interleaving], None],
    **options: Any,
) -> tuple[Exploration, float, str]:
    """explore() the actors: its result, the seconds it took, and its verdict (pass / FAIL)."""
    t0 = time.perf_counter()
    result = explore(actors, conn=conn, setup=setup, invariant=invariant, **options)
    return result, time.perf_counter() - t0, "pass" if result.passed else "FAIL"


def speed(conn: Any, actors: dict[str, Callable[[Any], None]], setup: Callable[[], None], invariant: Any) -> None:
    """explore's runs/s on the version-guarded 3 x 3 (DPOR to its guarantee) against the floor."""
    result, seconds, _ = timed_explore(actors, conn, setup, invariant, strategy="dpor", budget=2000)
    explored = seconds / result.runs
    client = conn.new_client(retries={"total_max_attempts": 1, "mode": "standard"})
    t0 = time.perf_counter()
    for _ in range(result.runs):  # the floor: the same calls, setup and invariant, one thread, no gate
        setup()
        for actor in actors.values():
            actor(client)
        invariant(None)
    floor = (time.perf_counter() - t0) / result.runs
    print(
        f"\nspeed, version-guarded 3 x 3, DPOR ({result.runs} runs): explore {1 / explored:.1f} runs/s "
        f"({1000 * explored:.1f} ms/run); floor {1 / floor:.1f} runs/s ({1000 * floor:.1f} ms/run: "
        f"setup, 9 calls, invariant, one thread); ratio {explored / floor:.2f}x"
    )


def main() -> None:
    parser = common.arguments(__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--weak-only", action="store_true", help="only the weak answers' cases (the last table)")
    args = parser.parse_args()

    conn = common.lab_table(args.backend, "labkit-bench-explore")
    table = conn.table_name
    if args.weak_only:
        weak_answers(conn, args.budget, ["lose-response", "transaction-conflict"])
        labkit.delete_table(conn)
        return

    counter = Counter.pk_sk(table)

    def setup() -> None:
        labkit.reset_table(conn)
        counter.start(conn.client)

    def guarded_retrying(name: str) -> Callable[[Any], None]:
        def actor(client: Any) -> None:
            while True:
                try:
                    n = counter.guarded_update(client)
                    break
                except client.exceptions.ConditionalCheckFailedException:
                    continue
            counter.audit(client, name, n)

        return actor

    def add(name: str) -> Callable[[Any], None]:
        def actor(client: Any) -> None:
            out = client.update_item(
                TableName=table,
                Key=counter.key,
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValues="UPDATED_NEW",
            )
            counter.audit(client, name, int(out["Attributes"]["n"]["N"]))

        return actor

    invariant = counter.invariant(conn.client)

    exhaustive = count_orders({name: 3 for name in NAMES})
    print(
        f"3 actors x 3 calls: exhaustive search = {exhaustive:,} orders; budget {args.budget:,}, "
        f"seed {args.seed}, backend {conn.backend}\n"
    )
    print(f"{'function':<26}{'strategy':<11}{'verdict':<8}{'runs':>6}{'vs exhaustive':>15}{'seconds':>9}  guarantee")
    for label, make in [
        ("lost update", counter.lost_update),
        ("version-guarded", counter.version_guarded),
        ("version-guarded, retrying", guarded_retrying),
        ("ADD", add),
    ]:
        actors = {name: make(name) for name in NAMES}
        for strategy in ("dpor", "pct"):
            result, elapsed, verdict = timed_explore(
                actors, conn, setup, invariant, budget=args.budget, seed=args.seed, strategy=strategy
            )
            ratio = f"1/{exhaustive / result.runs:,.0f}"
            print(
                f"{label:<26}{strategy:<11}{verdict:<8}{result.runs:>6}{ratio:>15}{elapsed:>9.1f}  {result.guarantee}"
            )
            if result.counterexample is not None:
                setup()
                replay = run_interleaving(actors, result.counterexample, conn=conn)
                same = " ".join(replay.turns) == result.counterexample
                try:
                    invariant(replay)
                    again = "passes (!)"
                except AssertionError:
                    again = "fails again"
                print(f"{'':<26}counterexample {result.counterexample!r}: replay follows it: {same}; invariant {again}")

    speed(conn, counter.actors(counter.version_guarded), setup, invariant)

    def audited_landed(res: Interleaving) -> None:
        n = counter.read(conn.client)[0]
        audits = counter.audited(conn.client)
        assert n >= audits, f"the counter is {n} but {audits} updates were audited: an update was lost"

    def sign_up(pin: bool, who: str) -> Callable[[Any], str]:
        def actor(client: Any) -> str:
            items = [
                {
                    "Put": {
                        "TableName": table,
                        "Item": {"PK": {"S": pk}, "SK": {"S": "S"}},
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                }
                for pk in (f"USER#{who}", f"EMAIL#{who}@example.com")
            ]
            token = str(uuid.uuid4())
            for _ in range(3):
                try:
                    client.transact_write_items(TransactItems=items, ClientRequestToken=token)
                    return "created"
                except ReadTimeoutError:
                    pass
                except ClientError as exc:
                    if "TransactionConflict" not in str(exc):
                        return "taken"
                if not pin:
                    token = str(uuid.uuid4())
            return "gave up"

        return actor

    def created(res: Interleaving) -> None:
        assert set(res.results.values()) == {"created"}, f"answers {sorted(res.results.items())}"

    faults = ["lose-response", "transaction-conflict"]
    print(f"\nfaults: {faults} at every call point (no fault first), budget {args.budget:,}\n")
    print(f"{'function':<26}{'faults':<8}{'strategy':<12}{'verdict':<8}{'runs':>6}{'seconds':>9}  guarantee")
    cases: list[tuple[str, dict[str, Any], Callable[[Interleaving], None]]] = [
        ("lost update (3 x 3 calls)", counter.actors(counter.lost_update), audited_landed),
        ("ADD (3 x 2 calls)", {n: add(n) for n in NAMES}, audited_landed),
        ("sign-up, new token", {n: sign_up(False, n.lower()) for n in ("A", "B")}, created),
        ("sign-up, pinned token", {n: sign_up(True, n.lower()) for n in ("A", "B")}, created),
    ]
    for label, actors, judge in cases:
        for with_faults in (False, True):
            result, elapsed, verdict = timed_explore(
                actors, conn, setup, judge, budget=args.budget, seed=args.seed, faults=faults if with_faults else None
            )
            found = f"; found {result.scenario}" if not result.passed else ""
            print(
                f"{label:<26}{'yes' if with_faults else 'no':<8}{result.strategy:<12}{verdict:<8}"
                f"{result.runs:>6}{elapsed:>9.1f}  {result.guarantee}{found}"
            )
    if conn.backend == "embedded":
        weak_answers(conn, args.budget, faults)
    labkit.delete_table(conn)


def weak_answers(conn: Any, budget: int, faults: list[str]) -> None:
    """docs/ci.md's three weak-answer cases: runs needed with the faults alone and with the weak answers."""
    table = conn.table_name
    order = {"PK": {"S": "ORDER#1"}, "SK": {"S": "ORDER"}}
    confirm = {
        "TableName": table,
        "Key": order,
        "UpdateExpression": "SET #s = :s",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {":s": {"S": "confirmed"}},
    }
    rows = [{"PK": {"S": "PRODUCT"}, "SK": {"S": f"p-{i}"}} for i in range(3)]
    query = {
        "TableName": table,
        "KeyConditionExpression": "PK = :p",
        "ExpressionAttributeValues": {":p": {"S": "CUSTOMER#1"}},
    }
    resource = resource_table(conn)

    def setup() -> None:
        labkit.reset_table(conn)
        conn.client.put_item(TableName=table, Item={**order, "status": {"S": "new"}})
        for i in range(3):
            conn.client.put_item(TableName=table, Item={"PK": {"S": "CUSTOMER#1"}, "SK": {"S": f"o-{i}"}})

    def read_back(consistent: bool) -> Callable[[Any], str]:
        def actor(client: Any) -> str:
            client.update_item(**confirm)
            return str(client.get_item(TableName=table, Key=order, ConsistentRead=consistent)["Item"]["status"]["S"])

        return actor

    def return_values(client: Any) -> str:
        return str(client.update_item(**confirm, ReturnValues="ALL_NEW")["Attributes"]["status"]["S"])

    def import_raw(client: Any) -> None:
        client.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": row}} for row in rows]})

    def import_batch_writer() -> None:
        with resource.batch_writer() as batch:
            for row in rows:
                batch.put_item(Item={k: v["S"] for k, v in row.items()})

    def count_one_page(client: Any) -> int:
        return int(client.query(**query)["Count"])

    def count_paginated(client: Any) -> int:
        return sum(int(page["Count"]) for page in client.get_paginator("query").paginate(**query))

    def confirmed(res: Interleaving) -> None:
        # a lost answer reaches the actor as an error (its caller is told so): only a wrong answer fails
        assert "A" in res.errors or res.results.get("A") == "confirmed", f"answered {res.results.get('A')!r}"

    def imported(res: Interleaving) -> None:
        items = conn.client.query(
            TableName=table,
            KeyConditionExpression="PK = :p",
            ExpressionAttributeValues={":p": {"S": "PRODUCT"}},
            ConsistentRead=True,
        )
        assert items["Count"] == 3, f"{items['Count']} of 3 imported"

    def counted(res: Interleaving) -> None:
        assert "A" in res.errors or res.results.get("A") == 3, f"counted {res.results.get('A')} of 3"

    weak = [*faults, "stale-read", "unprocessed-items", "short-page"]
    print(f"\nweak answers: {faults} alone, then with stale-read, unprocessed-items, short-page (one actor each)\n")
    print(f"{'function':<34}{'weak':<6}{'verdict':<8}{'runs':>6}{'ratio':>7}{'seconds':>9}  found / guarantee")
    cases: list[tuple[str, Any, Callable[[Interleaving], None]]] = [
        ("read-back, default GetItem", read_back(False), confirmed),
        ("read-back, ConsistentRead=True", read_back(True), confirmed),
        ("read-back, ReturnValues", return_values, confirmed),
        ("import, raw batch_write_item", import_raw, imported),
        ("import, batch_writer", import_batch_writer, imported),
        ("count, one Query page", count_one_page, counted),
        ("count, paginator", count_paginated, counted),
    ]
    for label, actor, judge in cases:
        without = 0
        for with_weak in (False, True):
            result, elapsed, verdict = timed_explore(
                {"A": actor}, conn, setup, judge, budget=budget, faults=weak if with_weak else faults
            )
            without = without or result.runs
            said = f"found {result.scenario}" if not result.passed else result.guarantee
            ratio = f"{result.runs / without:.1f}x"
            print(
                f"{label:<34}{'yes' if with_weak else 'no':<6}{verdict:<8}{result.runs:>6}{ratio:>7}"
                f"{elapsed:>9.1f}  {said}"
            )


if __name__ == "__main__":
    main()
