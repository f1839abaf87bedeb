"""Build notebooks/01_singleton_items.ipynb (then execute it: docs/notebooks.md).

Run from the repository root: ``python tools/build_01_singleton.py``. The stated times come from
``python tools/reading_time.py`` on the executed notebook (method in docs/notebooks.md).
"""

from __future__ import annotations

from nbbuild import code, md, write

CORE_MIN = 30
OPTIONAL_MIN = 20

CELLS = [
    md(f"""
    # 01 · Singleton items: one item, a constant key, global state

    **What you will learn:** to give *global state* (data that belongs to no user, tenant or order) one
    item under a **constant key**; to read it with **GetItem** (not a Scan, not a Query — measured in read
    units); to **fail closed** (a failed read gives safe defaults) and what that costs; to **cache** it;
    and the **lost-update race** of read-modify-write, *forced* with the race lab, with its fix — an
    `UpdateExpression` guarded by a version `ConditionExpression`, with bounded, jittered retries.

    **Time:** about **{CORE_MIN} minutes** for the core path (sections 1–8, then the summary and checklist
    at the end); the *Optional* sections add about {OPTIONAL_MIN} minutes. Estimated from what you read —
    words, code lines, output lines; method in `docs/notebooks.md`. The notebook runs in about half a
    minute.

    **Backend:** labkit's embedded DynamoDB endpoint by default (nothing to install, nothing billed).
    `LABKIT_BACKEND=local` runs it against DynamoDB Local, `LABKIT_BACKEND=aws` against real DynamoDB
    (opt-in; it creates and empties its own table `labkit-singleton`).

    **Code:** the logic lives in [`labkit/singleton/`](../labkit/singleton/); races come from
    [`labkit/races/`](../labkit/races/). This notebook shows the few lines that matter.
    """),
    md("""
    ### How to read this notebook

    * **`# NBVAL_CHECK_OUTPUT`** on a cell: the test suite re-runs the notebook and compares that cell's
      output with the one you see (it is deterministic). **`# NBVAL_IGNORE_OUTPUT`**: the output varies
      from run to run. You can ignore both while reading. **`assert` lines** are the lesson checking
      itself: if a race stops reproducing or a fix stops holding, the notebook fails.
    * **`Decimal('60')`** is the number 60: boto3 returns DynamoDB numbers as exact `decimal.Decimal`s.
    * **🔮 Predict**: answer *before* running the next cell (clear the outputs first: *Edit → Clear
      Outputs of All Cells*); the answer follows the output.
    * **labkit helpers, and the DynamoDB calls they make:**

    | helper | DynamoDB call(s) |
    |---|---|
    | `setup_lab("singleton")` | creates (or empties) the table `labkit-singleton` |
    | `store.read()` | one `GetItem` on the constant key (none when the cache answers) |
    | `store.create()` | one `PutItem` guarded by `attribute_not_exists(PK)` |
    | `store.set_flags(...)` | `GetItem`, then a version-guarded `UpdateItem` (raw call: section 7); again on conflict |
    | `stored_item(store, sk)` | one strongly consistent `GetItem`, as plain Python values |
    | `store.with_client(client)` | none: the same store on another client (one per race-lab actor) |
    | `fresh_item()` (defined in section 6) | `DeleteItem`, then `store.create()` |
    | `unsafe_set_flags`, `unsafe_scan_read` | anti-patterns, on purpose: `GetItem` + whole-item `PutItem`; a `Scan` |
    """),
    code("""
    %matplotlib inline
    import warnings

    import boto3
    import pandas as pd
    from botocore.config import Config

    from labkit.capacity import item_size
    from labkit.constants import FLAGS_SK_V1, FLAGS_SK_V2, SETTINGS_PK
    from labkit.errors import FlagTypeError, ItemSizeWarning, ItemTooLarge, RetriesExhausted
    from labkit.lab import setup_lab
    from labkit.plots import timeline
    from labkit.races import all_interleavings, run_interleaving, sweep
    from labkit.singleton import (
        DEFAULT_SCHEMA,
        Flag,
        FlagSchema,
        FlagStore,
        exponential_jitter,
        lost_changes,
        migrate,
        retire,
        stored_item,
        unsafe_scan_read,
        unsafe_set_flags,
        unsafe_update,
    )

    conn = setup_lab("singleton")
    """),
    md("""
    ## 1 · Recognise global state

    Some data is bound to no entity: a flag that is the same for everyone (`signup_enabled = false`), the
    knobs an app reads at boot, a kill switch. SQL keeps it in a one-row `config` table; DynamoDB keeps it
    in **one item under a hard-coded key**. Anything scoped to a user, tenant or order is an ordinary item
    keyed by that entity's id (`USER#42`), not a singleton.

    ## 2 · The constant key, and the declared flags

    The `V1` in the sort key is deliberate: when the *shape* of the flags changes, you write a `FLAGS#V2`
    item beside it and switch the readers (Optional C) instead of mutating the live item. Each flag has a
    type and a **safe default** for when the item cannot be read: features off, maintenance on, a
    conservative rate limit. A `version` attribute counts **changes** (each successful write adds 1).
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    pd.DataFrame([(f.name, f.type.__name__, f.safe_default) for f in DEFAULT_SCHEMA.flags],
                 columns=["flag", "type", "safe default"])
    """),
    md("""
    `FlagStore` is the singleton's API (`read`, `set_flags`, `update`, `toggle`, `create`). Create the
    item once, guarded by `attribute_not_exists(PK)`, so two deploys creating it at once cannot overwrite
    each other. DynamoDB evaluates that condition against **the one item with exactly this full key**
    (`PK=SETTINGS#APP` *and* `SK=FLAGS#V1`): it means "no item at this key", not "no item with this
    partition key" — so a `FLAGS#V2` item can later be created with the same guard.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    store = FlagStore.connect(conn)
    store.create()
    stored_item(store)          # numbers come back as Decimal: Decimal('60') is 60
    """),
    md("""
    ## 3 · Read it with GetItem — not with a Scan, not with a Query

    You know the full key, so a read is **one GetItem**: 0.5 read units (eventually consistent) or 1
    (strongly consistent) for an item up to 4 KB. A Scan with a filter reads *every item in the table*
    and throws away all but one — the filter runs after the read, and you pay for the read. To make that
    concrete, put 3,000 user profiles in the same table, as a single-table design would:
    """),
    code("""
    profiles = [{"PutRequest": {"Item": {"PK": {"S": f"USER#{i:05d}"}, "SK": {"S": "PROFILE"},
                                         "name": {"S": f"user {i}"}, "bio": {"S": "x" * 100}}}}
                for i in range(3000)]
    for start in range(0, len(profiles), 25):                       # BatchWriteItem takes 25 at a time
        request = {conn.table_name: profiles[start:start + 25]}
        while request:
            request = conn.client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
    print(len(profiles), "profiles written beside the settings item")
    """),
    md("""
    Read the singleton three ways. `read units` is DynamoDB's `ConsumedCapacity` (the embedded endpoint
    computes it by DynamoDB's rules). In the raw Query, `:pk` and `:sk` are *value placeholders*, filled
    from `ExpressionAttributeValues`.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    def exact_key_query(consistent):
        out = conn.client.query(TableName=conn.table_name, ConsistentRead=consistent, ReturnConsumedCapacity="TOTAL",
                                KeyConditionExpression="PK = :pk AND SK = :sk",
                                ExpressionAttributeValues={":pk": {"S": SETTINGS_PK}, ":sk": {"S": FLAGS_SK_V1}})
        return {"items read": out["ScannedCount"], "read units": out["ConsumedCapacity"]["CapacityUnits"]}


    rows = []
    for c in (False, True):
        for how, res in [("GetItem", store.read(consistent=c, use_cache=False)),
                         ("Scan + filter", unsafe_scan_read(store, consistent=c))]:
            rows.append({"read": how, "consistent": c, "items read": res.items_read, "read units": res.read_units})
        rows.append({"read": "Query (exact key)", "consistent": c, **exact_key_query(c)})
    reads = pd.DataFrame(rows)
    reads
    """),
    md("""
    Why does the Scan of 3,001 items cost 50.5 units and not 3,001 × 0.5 ≈ 1,500? **Query and Scan are
    billed on the bytes they read, summed over all items and rounded up to the next 4 KB** — not per
    item. (GetItem is billed per item, rounded up to 4 KB.)
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    settings_item = conn.client.get_item(TableName=conn.table_name, Key=store.key)["Item"]
    total = sum(item_size(p["PutRequest"]["Item"]) for p in profiles) + item_size(settings_item)
    print(f"the Scan read {total:,} bytes = {total / 4096:.1f} x 4 KB -> {-(-total // 4096)} units strongly consistent,"
          f" half that ({-(-total // 4096) / 2}) eventually consistent")
    units = reads.pivot(index="read", columns="consistent", values="read units")
    assert units.loc["Scan + filter", True] == -(-total // 4096), "Scan: billed on total bytes, in 4 KB steps"
    assert (units.loc["GetItem"] == units.loc["Query (exact key)"]).all(), "an exact-key Query costs a GetItem"
    assert (units.loc["Scan + filter"] > 50 * units.loc["GetItem"]).all(), "lesson broken: the Scan should cost more"
    """),
    md("""
    **An exact-key Query costs what GetItem costs.** GetItem is still the right call: it says *exactly
    this item* (one or none; no pages, no `LastEvaluatedKey`), and cannot drift into a bigger read — a
    Query that loses its `SK` condition reads, and bills, the whole `SETTINGS#APP` partition. (No
    timings here: locally a timing measures Python as much as DynamoDB, and one timing is noise. Units
    are what you pay.)

    ## 4 · The missing item: fail closed

    A singleton that is missing — a first deploy before anyone wrote it, a typo in the key, a missing
    table, the network down — must never crash the app, and must never *open* anything. `read()` never
    raises: it returns the safe defaults, marked `source="defaults"`, with the reason.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    unreachable = boto3.client(            # nothing listens on port 9: every call fails to connect
        "dynamodb", endpoint_url="http://127.0.0.1:9", region_name="us-east-1", aws_access_key_id="x",
        aws_secret_access_key="x", config=Config(connect_timeout=1, retries={"total_max_attempts": 1}))
    for case, broken in {"wrong key": FlagStore(conn.client, conn.table_name, sk="FLAGS#VI"),
                         "no table": FlagStore(conn.client, "labkit-no-such-table"),
                         "network down": FlagStore(unreachable, conn.table_name)}.items():
        res = broken.read()
        print(f"{case:12} -> {res.source}, maintenance_mode={res['maintenance_mode']}\\n{'':15} why: {res.reason}")
        assert res.is_default and dict(res.flags) == DEFAULT_SCHEMA.defaults(), "fail closed, not open"
    """),
    md("""
    A stored value of the wrong type falls back to the flag's safe default (a hand-edited `"yes"` never
    turns a feature on). On the way in, a wrong type is refused before anything is written — `True` for
    an int flag too: in Python `bool` is a subclass of `int`, so labkit checks for it explicitly.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    conn.client.put_item(TableName=conn.table_name, Item={
        "PK": {"S": SETTINGS_PK}, "SK": {"S": "FLAGS#HANDEDITED"}, "version": {"N": "1"},
        "signup_enabled": {"S": "yes"}, "maintenance_mode": {"BOOL": False}, "colour": {"S": "red"}})
    res = FlagStore(conn.client, conn.table_name, sk="FLAGS#HANDEDITED").read()
    print(f"{res.source} {dict(res.flags)}", *(f" - {note}" for note in res.notes), sep="\\n")
    assert res["signup_enabled"] is False and res["maintenance_mode"] is False
    try:
        store.set_flags(rate_limit_per_minute=True)
    except FlagTypeError as exc:
        print("FlagTypeError:", exc)
    assert stored_item(store)["version"] == 1, "the refused change wrote nothing"
    """),
    md("""
    ## 5 · Cache it — and what failing closed costs

    Every request of every instance reads the same item: a hot key by construction. Flags change a few
    times a day, so read them once per process every N seconds. The cache takes an injectable clock —
    here a simulated one, so the numbers are exact: 1,000 requests, one every 0.1 s, a 30-second TTL.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    now = [0.0]
    cached = FlagStore.connect(conn, cache_ttl=30, clock=lambda: now[0])
    for request in range(1000):
        now[0] = request * 0.1
        flags = cached.read()
    print(f"{cached.cache.misses} GetItems instead of 1000: {cached.cache.hits} calls saved")
    assert (cached.cache.misses, cached.cache.hits) == (4, 996)
    """),
    md("""
    The price of caching: a change takes up to the TTL to reach every process (`invalidate()` after your
    own change; a short TTL for a kill switch).

    The price of failing closed: **failed reads are not cached**, so during throttling or a network flap
    requests re-read — adding load to the struggling key (`FlagStore` waits `retry_after`, 1 s, after a
    failed call) — and get the defaults: the app sits in maintenance mode. The alternative: serve the **last known good** flags for a bounded time (say 60 s)
    after a failed read, then fall back to defaults: the app stays up through a short blip, at the risk of flags up to
    60 s stale. `FlagStore` is strict by default; `stale_ttl=60` switches to last known good (Optional D).

    ## 6 · The lost-update race, forced

    Two admins change the flags at the same moment: **admin A** turns on `signup_enabled`, **admin B**
    turns off `maintenance_mode`. Different flags, so both changes should survive. The tempting code is
    read-modify-write: `GetItem`, change one flag in memory, `PutItem` the whole item back
    (`unsafe_set_flags`). The race lab gives each admin its own client and forces the order of their
    calls: `A B A B` = A's GetItem, B's GetItem, A's PutItem, B's PutItem. No sleeps, no luck.

    > 🔮 **Predict:** after `A B A B`, which change is lost? And after `A B B A`?
    """),
    code("""
    A_CHANGE, B_CHANGE = {"signup_enabled": True}, {"maintenance_mode": False}
    BOTH = {**A_CHANGE, **B_CHANGE}


    def admins(write):
        \"\"\"Admin A and admin B, each writing its change with `write` on its own client.\"\"\"
        return {"A": lambda client: write(store.with_client(client), **A_CHANGE),
                "B": lambda client: write(store.with_client(client), **B_CHANGE)}


    def fresh_item():
        \"\"\"Before every order: the settings item as deployed (safe defaults, version 1).\"\"\"
        conn.client.delete_item(TableName=conn.table_name, Key=store.key)
        store.create()


    fresh_item()
    race = run_interleaving(admins(unsafe_set_flags), "ABAB", conn=conn)
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    item = stored_item(store)
    print({k: item[k] for k in ("signup_enabled", "maintenance_mode", "version")}, "lost:", lost_changes(store, BOTH))
    race.history[["actor", "turn", "operation", "outcome"]]
    """),
    code("""
    assert lost_changes(store, BOTH) == ["signup_enabled"], "lesson broken: the race did not reproduce"
    assert item["version"] == 2, "two changes were made, the version counted one"
    timeline(race)
    """),
    md("""
    **Answer:** in `A B A B` **A's** change is gone (`signup_enabled` still off), silently: B's `PutItem`
    came last and wrote back the whole item *as B had read it*, before A's write. No error; the `version`
    counts one change for two. The timeline (a lane per admin, a bar per call) marks B's stale read and
    the write that overwrote A. In `A B B A`, A writes last and wipes **B's** change.

    > 🔮 **Predict:** two calls each make 6 possible orders. In how many is a change lost?
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    def outcome(res):
        return {"lost": ", ".join(lost_changes(store, BOTH)) or "-", "version": stored_item(store)["version"]}


    before = all_interleavings(admins(unsafe_set_flags), conn=conn, setup=fresh_item, outcome=outcome)
    assert (before["lost"] != "-").sum() == 4, "lesson broken: read-modify-write should lose a change in 4 of 6 orders"
    before
    """),
    md("""
    **Answer:** 4 of 6. Only `A A B B` and `B B A A` — one admin done before the other starts — are safe;
    in every overlap the admin who writes *last* wins.

    ## 7 · The fix: change only what you mean, and only if nobody else did

    * An **UpdateExpression** changes just the named attributes on the server — no whole-item write-back.
    * A **ConditionExpression** lets the write succeed only if the item still has the `version` we read;
      otherwise DynamoDB refuses it with `ConditionalCheckFailedException` and changes nothing.

    Here is the raw boto3 call that `store.set_flags(signup_enabled=True)` sends. **`#name` is a
    placeholder for an attribute *name*** (from `ExpressionAttributeNames`), **`:value` for a *value***
    (from `ExpressionAttributeValues`, typed: `{"N": "2"}` is the number 2). Values never go into the
    expression text; names must go through a placeholder when they are DynamoDB reserved words (there are
    hundreds: `name`, `status`, `data`…) — labkit uses placeholders for every name.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    def raw_guarded_set(flag, value, read_version):
        return conn.client.update_item(
            TableName=conn.table_name, Key={"PK": {"S": SETTINGS_PK}, "SK": {"S": FLAGS_SK_V1}},
            UpdateExpression="SET #f0 = :f0, #ver = :next", ConditionExpression="#ver = :cur",
            ExpressionAttributeNames={"#f0": flag, "#ver": "version"},
            ExpressionAttributeValues={":f0": {"BOOL": value}, ":cur": {"N": str(read_version)},
                                       ":next": {"N": str(read_version + 1)}})


    fresh_item()
    raw_guarded_set("signup_enabled", True, read_version=1)            # A read version 1: applied
    try:
        raw_guarded_set("maintenance_mode", False, read_version=1)     # B read version 1 too: stale now
    except conn.client.exceptions.ConditionalCheckFailedException:
        print("B's write with the stale version: ConditionalCheckFailedException; nothing written")
    """),
    md("""
    `set_flags` then re-reads and tries again — at most `max_attempts` times (default 5), then it raises
    `RetriesExhausted`, having written nothing. Between attempts it waits with **jittered backoff**: a
    *random* pause whose upper bound doubles each attempt, so two writers that collided do not retry in
    lockstep. And a refused write is **billed**: a failed conditional write still consumes write units,
    so optimistic retries cost money under contention — fine at admin speed, not for a hot counter.

    > 🔮 **Predict:** with `set_flags`, what happens to B's first write in `A B A B`? How many attempts
    > does B need?
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    def safe_set(store, **changes):
        return store.set_flags(changes)


    fresh_item()
    fixed = run_interleaving(admins(safe_set), "ABAB", conn=conn)
    print("attempts:", {name: r.attempts for name, r in fixed.results.items()}, "lost:", lost_changes(store, BOTH))
    assert lost_changes(store, BOTH) == [], "the fix is broken: a change was lost"
    fixed.history[["actor", "turn", "operation", "outcome"]]
    """),
    code("""
    assert list(fixed.history["outcome"]).count("ConditionalCheckFailedException") == 1
    timeline(fixed)
    """),
    md("""
    **Answer:** B's first `UpdateItem` is refused (A bumped the version between B's read and write); B
    re-reads and writes again — 2 attempts, both billed, nothing lost. The retry runs *after* the forced
    order (the race lab forces the first four calls and lets later ones run freely): the timeline draws
    it paler, right of the dashed line.

    > 🔮 **Predict:** with `max_attempts=1` (no second chance), what does B get in `A B A B`? And with the
    > default retries, in how many of the 6 orders is a change lost?
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    impatient = FlagStore.connect(conn, max_attempts=1)
    fresh_item()
    gave_up = run_interleaving({"A": lambda c: store.with_client(c).set_flags(A_CHANGE),
                                "B": lambda c: impatient.with_client(c).set_flags(B_CHANGE)}, "ABAB", conn=conn)
    print(f"{type(gave_up.errors['B']).__name__}: {gave_up.errors['B']}")
    assert isinstance(gave_up.errors["B"], RetriesExhausted) and lost_changes(store, BOTH) == ["maintenance_mode"]

    after = all_interleavings(admins(safe_set), conn=conn, setup=fresh_item, outcome=outcome)
    assert (after["lost"] == "-").all(), "the fix is broken: an update was lost"
    assert set(after["version"]) == {3}, "the fix is broken: the version must count both changes"
    print(f"version-guarded update lost a change in {(after['lost'] != '-').sum()} of {len(after)} orders")
    """),
    md("""
    **Answer:** B gets `RetriesExhausted`: its change was not written — but, unlike in the race, B
    *knows*. With retries, no change is lost in any order, and the version counts both.

    ## 8 · When a singleton is the wrong shape

    Keep it small (reads cost 4 KB steps; labkit warns when a write crosses one and refuses items over
    400 KB — Optional E) and *rarely written*. A singleton incremented on every request funnels every
    write into one partition (about 1,000 write units per second at most), and guarded writers would
    spend their time retrying — and paying for refused writes. That is a **sharded counter**: N items
    (`COUNTER#views#0` … `#N-1`), writers `ADD` to a random shard, a reader sums them with one
    `BatchGetItem`.

    That is the core path: jump to the **Summary and checklist** at the end, or read on.

    ---

    ## Optional A · Many writers at once (statistical)

    Forced orders prove the point; a stress run shows real concurrency. Each of *n* writers turns on its
    own flag at the same moment (a start barrier), with read-modify-write and with the version guard.
    How many changes are lost depends on timing, so only the invariant of the fix is asserted:
    **nothing lost**.
    """),
    code("""
    # NBVAL_IGNORE_OUTPUT
    FEATURES = FlagSchema(tuple(Flag(f"feature_{i:02d}", bool, False) for i in range(32)))
    many = FlagStore(conn.client, conn.table_name, sk="FLAGS#STRESS", schema=FEATURES,
                     max_attempts=200, backoff=exponential_jitter(base=0.001, cap=0.02))


    def reset_features():
        conn.client.delete_item(TableName=conn.table_name, Key=many.key)
        many.create()


    def lost_features(df):
        return len(lost_changes(many, {f"feature_{w:02d}": True for w in df["worker"]}))


    writers = {
        "read-modify-write": lambda c, w, seq: unsafe_set_flags(many.with_client(c), {f"feature_{w:02d}": True}),
        "version-guarded update": lambda c, w, seq: many.with_client(c).set_flags({f"feature_{w:02d}": True}),
    }
    stress_runs = pd.concat([
        sweep(op, conn, thread_counts=(2, 4, 8, 16, 32), ops=1, setup=reset_features, measure=lost_features)
        .assign(writer=name)
        for name, op in writers.items()])
    pivot = stress_runs.pivot(index="threads", columns="writer", values="anomalies")
    ax = pivot.plot(kind="bar", figsize=(7, 3), ylabel="changes lost", xlabel="concurrent writers", rot=0,
                    title="n writers each turn on their own flag at once")
    for bars in ax.containers:
        ax.bar_label(bars)
    pivot
    """),
    code("""
    guarded = stress_runs[stress_runs["writer"] == "version-guarded update"]
    assert (guarded["anomalies"] == 0).all(), "the fix is broken: a concurrent change was lost"
    assert (guarded["failed"] == 0).all(), "every guarded writer should succeed within its retries"
    """),
    md("""
    ## Optional B · Transactions in one minute

    Optional C's `retire()` uses a transaction, so here is what one is. `TransactWriteItems` sends up to
    **100 actions** (`Put`, `Update`, `Delete`, `ConditionCheck`) on up to 100 distinct items, at most
    **4 MB** in total, and applies **all of them or none**. A `ConditionCheck` writes nothing: it only
    makes the transaction depend on a condition on another item. Each action carries its own
    `ConditionExpression`; if one fails, the whole transaction is cancelled with
    `TransactionCanceledException`, whose `CancellationReasons` list says, per action and in request
    order, which one failed.

    The cost: DynamoDB does each item's work twice (prepare, then commit), so a transactional write
    costs **twice the write units** the same writes cost alone. Notebook 02 builds its whole lesson on
    transactions.

    ## Optional C · Changing the shape: `FLAGS#V1` → `FLAGS#V2`

    Say the feature flags should move into one map. Do not mutate the live item in place: write the new
    shape under a new key, switch the writers, then the readers (by configuration), and retire the old
    item only when nothing uses it.

    `migrate(store, transform)` reads V1, runs `transform`, and writes V2 with `attribute_not_exists(PK)`
    — evaluated against the item at `SETTINGS#APP` / `FLAGS#V2` only (section 2), so the first migrator
    succeeds although V1 exists under the same partition key, and a second one is refused.

    > 🔮 **Predict:** two migrators start at once. In how many of the 6 orders is V2 written twice? Who
    > wins in `A B B A`?
    """),
    code("""
    def to_v2(v1):
        return {"features": {"signup": v1["signup_enabled"], "ai_search": v1["ai_search_enabled"]},
                "maintenance_mode": v1["maintenance_mode"],
                "rate_limit_per_minute": v1["rate_limit_per_minute"]}


    def before_migration():
        fresh_item()
        store.set_flags(signup_enabled=True)
        conn.client.delete_item(TableName=conn.table_name, Key={"PK": {"S": SETTINGS_PK}, "SK": {"S": FLAGS_SK_V2}})


    def migration_outcome(res):
        won = [name for name, r in res.results.items() if r.won]
        loser = next(r for r in res.results.values() if not r.won)
        writes = res.history[(res.history["operation"] == "PutItem") & (res.history["outcome"] == "ok")]
        return {"winner": ", ".join(won), "V2 writes": len(writes), "loser was told": loser.reason.split(" (")[0]}


    migrators = {m: (lambda client: migrate(store.with_client(client), to_v2)) for m in ("A", "B")}
    migrations = all_interleavings(migrators, conn=conn, setup=before_migration, outcome=migration_outcome)
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    migrations
    """),
    code("""
    assert (migrations["winner"].str.len() == 1).all(), "exactly one migrator must win"
    assert (migrations["V2 writes"] == 1).all(), "V2 must be written exactly once"
    v2 = stored_item(store, FLAGS_SK_V2)
    assert v2["features"] == {"signup": True, "ai_search": False} and v2["migrated_from"] == "FLAGS#V1"
    """),
    md("""
    **Answer:** in none; exactly one migrator writes V2 in every order — whoever sends its `PutItem`
    first (in `A B B A`, that is B). The loser overwrites nothing and is told why.

    A V2 reader is a `FlagStore` on the new key with the new schema. Note what the schema below leaves
    out: `features`, the map the migration just created. `FlagSchema` declares only scalar flags
    (`bool`, `int`, `str`), so it cannot declare a map; this reader reads the two scalars and reports
    `features` as an unknown attribute. A real V2 reader would decode the map in its own code.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    V2_SCHEMA = FlagSchema((Flag("maintenance_mode", bool, True), Flag("rate_limit_per_minute", int, 60)))
    reader = FlagStore(conn.client, conn.table_name, sk=FLAGS_SK_V2, schema=V2_SCHEMA)
    v2_read = reader.read()
    print("V2 reader:", v2_read.source, dict(v2_read.flags))
    for note in v2_read.notes:
        print(" -", note)
    """),
    md("""
    When every reader and writer uses V2, `retire()` deletes V1 — in one transaction (Optional B): a
    `ConditionCheck` that V2 exists, and a `Delete` of V1 guarded by "V1 still has the version it was
    migrated from", so a late write to V1 is not thrown away silently.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    retire(store)
    print("V1 after retire:", stored_item(store, FLAGS_SK_V1))
    v1_read = store.read(use_cache=False)
    print("a process still reading V1 gets:", v1_read.source, dict(v1_read.flags))
    assert stored_item(store, FLAGS_SK_V1) is None and stored_item(store, FLAGS_SK_V2) is not None
    assert v1_read.is_default and v1_read["maintenance_mode"] is True
    """),
    md("""
    Look at that last line: a process still configured for V1 now reads **the safe defaults** — signups
    off, **maintenance mode on**. Failing closed is doing its job, but for that process it means the app
    is down for its users until it is redeployed with the V2 key. So the order is: switch the writers
    (or freeze changes) → switch every reader and check that nothing reads `FLAGS#V1` any more (e.g. in
    your request logs) → only then retire. `retire` itself refuses if V1 changed after the migration.

    ## Optional D · Last known good, for a bounded time

    Section 5's trade-off, in `FlagStore`: `stale_ttl=60` keeps the last flags read from DynamoDB and,
    when a *call* fails (network, throttling, a 5xx — not a missing item, which is an answer), serves
    them as `source="stale"`, with their `age`, while younger than `cache_ttl + stale_ttl`; then the
    defaults. After a failed call the store also waits `retry_after` (1 s) before calling DynamoDB again,
    so a throttled hot key is not read on every request. Two stores, the same outage:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    fresh_item()
    store.set_flags(maintenance_mode=False, signup_enabled=True)
    now = [0.0]
    stores = {"strict": FlagStore.connect(conn, cache_ttl=0, clock=lambda: now[0]),     # stale_ttl=0
              "stale_ttl=60": FlagStore.connect(conn, cache_ttl=0, stale_ttl=60, clock=lambda: now[0])}
    seen = {}
    for name, s in stores.items():
        now[0] = 0
        seen[name, 0] = s.read()                   # DynamoDB answers
        s.client = unreachable                     # then the network goes down
        for t in (30, 90):
            now[0] = t
            seen[name, t] = s.read()
    for (name, t), res in seen.items():
        print(f"{name:12} t={t:2} s -> {res.source:8} maintenance_mode={res['maintenance_mode']!s:5} age={res.age}")
    assert [seen["strict", t].source for t in (0, 30, 90)] == ["item", "defaults", "defaults"]
    assert [seen["stale_ttl=60", t].source for t in (0, 30, 90)] == ["item", "stale", "defaults"]
    assert not seen["stale_ttl=60", 30].is_default and seen["stale_ttl=60", 30]["maintenance_mode"] is False
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    calls = []
    unreachable.meta.events.register("before-call.dynamodb.GetItem", lambda **_: calls.append(1))
    now[0] = 90.5                                  # half a second after the failed read at t=90
    reads = [stores["stale_ttl=60"].read() for _ in range(100)]
    why = reads[-1].reason
    print(f"100 reads, {len(calls)} GetItem calls: {why[why.index('not retried'):]}")
    assert calls == [] and {r.source for r in reads} == {"defaults"}
    """),
    md("""
    Strict, the app goes into maintenance mode the moment the network fails; with `stale_ttl=60` it stays
    up on flags at most 90 s old (30 s cache + 60 s), then fails closed. What you trade: for that window
    the app may run on flags changed meanwhile — a kill switch flipped during the outage is not seen. A
    missing item is never served stale: it is an answer, and the answer is "defaults".

    ## Optional E · Changes computed from the read, and the size guard

    For two *different* flags, `SET` alone would already keep both. But many changes depend on what was
    read — "raise the rate limit by 10". `store.update(fn)` recomputes `fn` from a fresh read after every
    conflict.

    > 🔮 **Predict:** two admins each raise the limit of 60 by 10. Without the guard (`unsafe_update`),
    > what is the final limit in `A B A B`? With `store.update`?
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    def raise_limit(flags):
        return {"rate_limit_per_minute": flags["rate_limit_per_minute"] + 10}


    def limit_outcome(res):
        return stored_item(store)["rate_limit_per_minute"]


    raisers = {"unsafe_update": lambda client: unsafe_update(store.with_client(client), raise_limit),
               "store.update": lambda client: store.with_client(client).update(raise_limit)}
    limits = pd.DataFrame({
        name: all_interleavings({"A": fn, "B": fn}, conn=conn, setup=fresh_item, outcome=limit_outcome)
        .set_index("order")["outcome"]
        for name, fn in raisers.items()})
    assert sorted(limits["unsafe_update"]) == [70, 70, 70, 70, 80, 80], "lesson broken: no raise was lost"
    assert (limits["store.update"] == 80).all(), "the fix is broken: a raise was lost"
    limits
    """),
    md("""
    **Answer:** 70 without the guard (both read 60, both write 70), in the same 4 of 6 orders; 80 with it,
    in every order.

    The size guard: a config blob that creeps past 4 KB doubles the cost of every read. labkit warns when
    a write pushes the item past a read-unit step, and refuses anything above 400 KB before writing.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    fresh_item()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store.set_flags(banner_message="Scheduled maintenance tonight. " * 150)
    print(caught[0].category.__name__, "-", str(caught[0].message).split(":")[0])
    print("strongly consistent read now costs", store.read(consistent=True, use_cache=False).read_units, "read units")
    assert issubclass(caught[0].category, ItemSizeWarning)

    try:
        store.set_flags(banner_message="x" * 500_000)
    except ItemTooLarge as exc:
        print("ItemTooLarge:", exc)
    assert stored_item(store)["version"] == 2, "nothing was written by the refused change"
    """),
    md("""
    ---

    ## Summary

    - Global state is **one item under a constant, versioned key**, read with **GetItem**. Query and Scan
      bill the total bytes read in 4 KB steps: a Scan pays for the whole table; an exact-key Query costs
      a GetItem but says less.
    - **Fail closed** — missing item, missing table, network error → safe defaults, and the caller can
      tell. During an outage that means maintenance mode; a bounded last-known-good window is the trade.
    - **Cache** per process with a TTL: 4 GetItems instead of 1,000.
    - **Read-modify-write with PutItem loses a change in 4 of 6 orders**; a version-guarded
      `UpdateExpression` with bounded, jittered retries loses none. Refused writes are billed; when
      retries run out the caller gets `RetriesExhausted`.

    ## Checklist

    - [ ] **Constant key**, versioned (`SETTINGS#APP` / `FLAGS#V1`); no ids in it.
    - [ ] **GetItem** on the exact key — not Scan, not Query.
    - [ ] **Fail closed**: missing item, missing table, network error → safe defaults, with the reason (§4).
    - [ ] **Validate** types before writing — `True` is refused for an int flag (§4).
    - [ ] **Cache** with a TTL; invalidate after your own writes; do not cache failures (or serve last
          known good for a bounded time, `stale_ttl`, Optional D), and back off after a failed call.
    - [ ] **No read-modify-write with PutItem**: `UpdateExpression`, a `ConditionExpression` on `version`,
          bounded jittered retries, `RetriesExhausted` when they run out (§7).
    - [ ] **Guard the first write** (`attribute_not_exists(PK)`: no item at this exact key).
    - [ ] **Keep it small** (4 KB read steps; 400 KB is a hard limit) and **not a counter** (shard it).
    - [ ] **Migrate by key** (`FLAGS#V2`), one migrator wins; writers, then readers, then retire V1 —
          a V1 reader after retire runs on the defaults (Optional C).
    """),
]

if __name__ == "__main__":
    write("notebooks/01_singleton_items.ipynb", CELLS)
