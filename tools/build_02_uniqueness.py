"""Build notebooks/02_uniqueness.ipynb (then execute it: docs/notebooks.md).

Run from the repository root: ``python tools/build_02_uniqueness.py``. The stated times come from
``python tools/reading_time.py`` on the executed notebook (method in docs/notebooks.md).
"""

from __future__ import annotations

from nbbuild import code, md, write

CORE_MIN = 30
OPTIONAL_MIN = 15

CELLS = [
    md(f"""
    # 02 · Uniqueness across several attributes

    DynamoDB enforces exactly one uniqueness rule: **no two items share a primary key** — the pair
    (`PK`, `SK`), the one constraint that does span two attributes. There is no `UNIQUE (email)`, no
    `UNIQUE (username)`. This lesson shows the race you ship when you "just check first", and the fix:
    **one marker item per unique value, written in the same transaction as the record**, each Put
    guarded by `attribute_not_exists(PK)`.

    **You will learn** why check-then-write (Query, Scan or GSI, then PutItem) creates duplicate
    accounts — forced, in every interleaving; the marker-item model and why values are normalised
    first; what a transaction costs and allows; how to read `CancellationReasons` into "email taken" /
    "username taken"; how to change an email and delete an account without stranding a marker, and how
    to audit; and why a retry must pin its own `ClientRequestToken`.

    **Time:** about **{CORE_MIN} minutes** for the core path (sections 1–8, then the summary and checklist
    at the end); the *Optional* sections add about {OPTIONAL_MIN} minutes (a sign-up storm, composite
    uniqueness, the source article's transaction, the 10-minute token window). Estimated from what you
    read — words, code lines, output lines; method in `docs/notebooks.md`. The notebook runs in about
    half a minute.

    **Runs on:** labkit's embedded endpoint by default (nothing to install, nothing billed);
    `LABKIT_BACKEND=local` uses DynamoDB Local, `LABKIT_BACKEND=aws` real DynamoDB. **Code:**
    [`labkit/uniqueness/`](../labkit/uniqueness/), the race lab in
    [`labkit/races/`](../labkit/races/).
    """),
    md("""
    ### How to read this notebook

    * **`# NBVAL_CHECK_OUTPUT`** on a cell: the test suite re-runs the notebook and compares that cell's
      output with the one you see (it is deterministic). **`# NBVAL_IGNORE_OUTPUT`**: the output varies
      from run to run. Ignore both while reading. **`assert` lines** are the lesson checking itself.
    * **🔮 Predict**: answer *before* running the next cell (clear the outputs first: *Edit → Clear
      Outputs of All Cells*); the answer follows the output.
    * Accounts get fixed ids (`a1`, `b1`) where that keeps the outputs stable; an app leaves
      `account_id` out and gets a random one.
    * **labkit helpers, and the DynamoDB calls they make** (`uniq` is `labkit.uniqueness`):

    | helper | DynamoDB call(s) |
    |---|---|
    | `reset()`, `accounts(email)` (defined below) | empty the table; count accounts with a strongly consistent `Scan` |
    | `uniq.register_check_then_write` | the anti-pattern: a `Query` on `email-index` (or a `Scan`), then a `PutItem` |
    | `uniq.register(...)` | one `TransactWriteItems`: the account `Put` and a marker `Put` per value |
    | `uniq.change_email`, `uniq.delete_account` | `GetItem` of the account, then one `TransactWriteItems` |
    | `uniq.table_items`, `uniq.audit` | a strongly consistent `Scan`; the audit then checks in Python |
    | `uniq.account_items(id)` | `GetItem` of the account and of each marker its values imply |
    | `uniq.prepare_registration`, `uniq.submit` | none; then the same `TransactWriteItems` as `register` |
    | `uniq.lose_next_response(client)` | none: drops the client's next answer *after* DynamoDB applied it |
    """),
    code("""
    %matplotlib inline
    import json

    import matplotlib.pyplot as plt
    import pandas as pd

    import labkit
    from labkit import uniqueness as uniq
    from labkit.errors import IdempotencyMismatch, LookAlikeValue, StaleAccount, ValueTaken
    from labkit.lab import setup_lab
    from labkit.plots import timeline
    from labkit.races import all_interleavings, run_interleaving, stress

    conn = setup_lab("uniqueness")
    client, table = conn.client, conn.table_name
    ADA = "ada@lovelace.io"


    def reset():
        \"\"\"Empty the lesson's table (run before every forced order).\"\"\"
        labkit.reset_table(conn)


    def accounts(email=ADA):
        \"\"\"How many account items carry this email (a strongly consistent Scan).\"\"\"
        items = uniq.table_items(client, table)
        return 0 if items.empty else int((items["PK"].str.startswith("ACCT#") & (items["email"] == email)).sum())
    """),
    md("""
    ## 1 · There is no UNIQUE

    The lab table has a string `PK` + `SK` and a global secondary index `email-index` on `email`. Two
    account items with different ids and the same email are two different keys, so DynamoDB stores
    both — and the index happily lists both. An index is a way to *find* items, not a constraint.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    for account_id in ("a1", "a2"):
        client.put_item(TableName=table, Item={"PK": {"S": f"ACCT#{account_id}"}, "SK": {"S": "PROFILE"},
                                               "id": {"S": account_id}, "email": {"S": ADA}})
    found = client.query(TableName=table, IndexName="email-index", KeyConditionExpression="email = :e",
                         ExpressionAttributeValues={":e": {"S": ADA}})
    print(f"accounts listed under {ADA} in email-index: {found['Count']}")
    assert found["Count"] == 2
    """),
    md("""
    ## 2 · The obvious approach, and its race

    The instinct: look the email up, see nothing, write the account. That is
    `uniq.register_check_then_write` (kept on purpose): a Query on `email-index`, then a PutItem. The race
    lab runs two sign-ups for `ada@lovelace.io` at once, each with its own client, and **forces** the order
    of their calls: `A B A B` — A reads, B reads, A writes, B writes. Nothing sleeps.

    > 🔮 **Predict:** how many accounts carry `ada@lovelace.io` after `A B A B`?
    """),
    code("""
    def naive(username, read="index"):
        \"\"\"A sign-up actor for the race lab: check the email, then write (the anti-pattern).\"\"\"
        return lambda c: uniq.register_check_then_write(c, table, email=ADA, username=username, read=read)


    reset()
    race = run_interleaving({"A": naive("ada"), "B": naive("countess")}, "ABAB", conn=conn)
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    duplicates = accounts()
    print(f"accounts for {ADA}: {duplicates}")
    assert duplicates == 2, "lesson broken: the check-then-write race did not reproduce"
    race.history[["turn", "actor", "operation", "outcome"]]
    """),
    code("""
    timeline(race, marks={("A", 0): "sees 'free'", ("B", 0): "sees 'free'",
                          ("A", 1): "account 1", ("B", 1): "account 2"})
    """),
    md("""
    **Answer:** two. Both reads came back empty, both writes succeeded: **two accounts on one email**,
    and nothing in the table flags it.

    > 🔮 **Predict:** of the 6 possible orders of the four calls, how many end with a duplicate?
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    def outcome(res):
        n = accounts()
        return {"accounts": n, "duplicate": n > 1,
                "A": type(res.errors["A"]).__name__ if "A" in res.errors else "ok",
                "B": type(res.errors["B"]).__name__ if "B" in res.errors else "ok"}


    RACY = {"A B A B", "A B B A", "B A A B", "B A B A"}  # both reads before both writes
    naive_orders = all_interleavings({"A": naive("ada"), "B": naive("countess")},
                                     conn=conn, setup=reset, outcome=outcome)
    duplicated = set(naive_orders.loc[naive_orders["duplicate"], "order"])
    assert duplicated >= RACY, "lesson broken: an order with both reads first did not duplicate"
    if conn.backend != "aws":  # on AWS a stale GSI can make the other two orders duplicate as well
        assert duplicated == RACY, "lesson broken: expected duplicates in exactly 4 of 6 orders"
    print(naive_orders.to_string(index=False))
    """),
    md("""
    **Answer:** 4 of 6 — every order in which both reads come before both writes. In the other two, the
    second sign-up sees the first and stops with `ValueTaken`.

    ## 3 · Why a fresher check cannot save you

    A GSI is **eventually consistent**: DynamoDB copies writes to the index asynchronously, so the read
    meant to guard your write can be stale by design, and DynamoDB refuses a strongly consistent read on
    a GSI. But staleness is not the real problem: the embedded endpoint updates its index synchronously
    and the race still happened. So swap the Query for a **strongly consistent Scan** of the base table
    (`read="scan"`).

    > 🔮 **Predict:** with a strongly consistent read, how many of the 6 orders duplicate?
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    try:
        client.query(TableName=table, IndexName="email-index", ConsistentRead=True,
                     KeyConditionExpression="email = :e", ExpressionAttributeValues={":e": {"S": ADA}})
    except client.exceptions.ClientError as exc:
        print(exc.response["Error"]["Code"], "-", exc.response["Error"]["Message"])
    consistent_orders = all_interleavings({"A": naive("ada", read="scan"), "B": naive("countess", read="scan")},
                                          conn=conn, setup=reset, outcome=outcome)
    assert set(consistent_orders.loc[consistent_orders["duplicate"], "order"]) == RACY, \\
        "lesson broken: the consistent read did not race in the 4 orders"
    print("duplicates with a strongly consistent Scan:", ", ".join(sorted(RACY)))
    """),
    md("""
    **Answer:** the same 4. The gap between *any* read and the write is the race. The fix is not a
    fresher check; it is a write that refuses to land on a taken value.

    ## 4 · The marker-item model

    The engine already refuses two items with one key. So encode every uniqueness rule **as a key**:
    next to the account, write one marker item per protected value, whose partition key *is* the
    namespaced value.

    | item | PK | SK | attributes |
    |---|---|---|---|
    | account | `ACCT#<id>` | `PROFILE` | `id`, `email`, `username`, … |
    | email marker | `UNIQ#EMAIL#ada@lovelace.io` | `LOCK` | `owner=<id>` |
    | handle marker | `UNIQ#HANDLE#ada` | `LOCK` | `owner=<id>` |

    The account's key is a generated id, never the email, so the email can change without rewriting the
    primary key. labkit records the marker's `owner` so that releasing it can be guarded by *who* holds it.
    Each marker Put carries `attribute_not_exists(PK)`, which DynamoDB evaluates against **the one item
    with exactly that full key** (`PK=UNIQ#EMAIL#ada@lovelace.io`, `SK=LOCK`): it fails only if that very
    marker exists.

    **Normalise before a value becomes a key.** `Ada@Lovelace.io` and `ada@lovelace.io` are different
    keys: without normalising, both get a marker. Strictly, the standard (RFC 5321) lets the part before
    the `@` be case-sensitive, so they *could* be two mailboxes; in practice providers treat them as one,
    and letting both register invites impersonation — so folding case is a **policy**, and a sound one.
    labkit trims, applies Unicode NFKC (`ａｄａ` → `ada`) and case-folds emails and usernames.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    for raw in (" Ada@Lovelace.io ", "ADA@LOVELACE.IO", "ａｄａ@ｌｏｖｅｌａｃｅ.ｉｏ"):
        print(f"{raw!r:32} -> {uniq.marker_key('EMAIL', uniq.normalise_email(raw))['PK']}")
    """),
    md("""
    One sign-up is one **transaction** (`TransactWriteItems`): up to 100 actions on distinct items, at
    most 4 MB in total, applied **all or none**. It costs **twice the write units** of the same writes
    done alone (DynamoDB prepares, then commits): this three-item sign-up costs 6 write units, not 3.
    `account_items` shows the account beside the markers its values imply; `present` says whether that
    item exists in the table (`False` would be a missing marker).
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    reset()
    ada = uniq.register(client, table, email="Ada@Lovelace.io", username="Ada", account_id="a1",
                        attributes={"name": "Ada Lovelace"})
    print({action["Put"]["ConditionExpression"] for action in ada.transact_items(table)})
    items = uniq.account_items(client, table, "a1").fillna("")
    print(items[["PK", "SK", "owner", "email", "username", "present"]].to_string(index=False))
    """),
    md("""
    ## 5 · The transactional fix, on the same orders

    Same two sign-ups, same six orders. To keep the orders identical, each actor still makes two calls: a
    friendly pre-check (`check_first=True`: a strongly consistent BatchGetItem of the markers, so most
    taken values fail early and cheaply) and then the guarded transaction. The pre-check races exactly
    like before; the transaction is what is correct.

    > 🔮 **Predict:** in how many of the 6 orders is there a duplicate now? In `A B A B`, who gets the
    > account?
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    def safe(username):
        return lambda c: uniq.register(c, table, email=ADA, username=username, check_first=True)


    safe_orders = all_interleavings({"A": safe("ada"), "B": safe("countess")}, conn=conn, setup=reset, outcome=outcome)
    assert safe_orders.attrs["calls"] == {"A": 2, "B": 2}, "lesson broken: not the same orders"
    assert (safe_orders["accounts"] == 1).all(), "the fix is broken: an order produced duplicates"
    print(safe_orders.to_string(index=False))
    """),
    md("""
    **Answer:** none. In `A B A B` both pre-checks see "free", A's transaction lands, B's is cancelled on
    the email marker: A gets the account, B a `ValueTaken`. Whoever *writes* first wins.

    ## 6 · Read the error, don't guess

    A cancelled transaction carries `CancellationReasons` — one entry per action, **in request order**:
    slot 0 the account, slot 1 the email marker, slot 2 the handle marker. `ConditionalCheckFailed` in
    slot 1 means the email is taken; in slot 2, the username. labkit maps the slots to a `ValueTaken`
    naming the fields, keeps the botocore error as `__cause__`, and tells a taken value apart from a
    `TransactionConflict` (another transaction on the same items at that moment: retryable).
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    reset()
    uniq.register(client, table, email=ADA, username="ada")
    rows = []
    for email, username in [("Ada@Lovelace.io", "countess"), ("ada@babbage.io", "ADA"), (ADA, "ada")]:
        try:
            uniq.register(client, table, email=email, username=username)
        except ValueTaken as exc:
            rows.append({"email": email, "username": username, "taken": ", ".join(exc.fields),
                         "reasons": " | ".join(exc.reason_codes), "cause": type(exc.__cause__).__name__})
    errors = pd.DataFrame(rows)
    assert list(errors["taken"]) == ["email", "username", "email, username"] and accounts() == 1
    print(errors.to_string(index=False))
    """),
    md("""
    Bad input never reaches DynamoDB: an empty or malformed email, an empty username, a value whose
    marker key would exceed DynamoDB's 2,048-byte partition-key limit, an unknown field or a field given
    twice raise `ValidationError` before any request. The email check is deliberately loose (one `@`,
    something before it, a dot inside the domain, no whitespace): it catches typos; it cannot prove the
    mailbox exists.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    for bad in ({"email": "ada.lovelace.io", "username": "ada"}, {"email": ADA, "username": "   "},
                {"email": ADA, "username": "x" * 2100}):
        try:
            uniq.register(client, table, **bad)
        except labkit.ValidationError as exc:
            print("ValidationError:", exc)
    """),
    md("""
    **Look-alikes** must not become two keys. Fullwidth letters, upper case, a no-break space and
    decomposed accents fold to one form; control and invisible characters, and words mixing Latin with
    Cyrillic or Greek, are refused: `LookAlikeValue` (a `ValidationError`) names field and character.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    for email in ("ＡＤＡ@Lovelace.io", "ada\\u200b@lovelace.io", "\\u0430da@lovelace.io"):  # fullwidth; ZWSP; Cyrillic а
        try:
            uniq.register(client, table, email=email, username="ada2")
        except (ValueTaken, LookAlikeValue) as exc:
            print(f"{email!a:28} {type(exc).__name__}: {exc}")
    assert accounts() == 1, "a look-alike passed as a new value"
    """),
    md("""
    ## 7 · Keep the markers honest: change, delete, audit

    Markers mirror the live value, so every operation that touches a protected attribute is one
    transaction too. **Change email**: Put the new marker (`attribute_not_exists`), Delete the old one
    (guarded by `owner = <id>`), Update the account (guarded by its current email). **Delete account**:
    Delete the account and every marker, each marker guarded by its owner.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    reset()
    uniq.register(client, table, email=ADA, username="ada", account_id="a1")
    uniq.register(client, table, email="bob@babbage.io", username="bob", account_id="b1")
    print("a1 changed:", uniq.change_email(client, table, "a1", "Ada@Babbage.io"))
    try:
        uniq.change_email(client, table, "b1", "ada@babbage.io")
    except ValueTaken as exc:
        print("b1:", exc)
    uniq.register(client, table, email=ADA, username="countess", account_id="c1")  # ada@lovelace.io is free again
    uniq.delete_account(client, table, "b1")
    print(list(uniq.table_items(client, table)["PK"]))
    assert uniq.audit(client, table).ok, "lesson broken: change/delete left an orphan or missing marker"
    """),
    md("""
    **The trap: a lock treated as fire-and-forget.** Delete only the account item — as code that forgot
    the markers would — and its markers stay behind: nobody can register that email or username again.
    The audit (a Scan, then checks) finds such **orphan markers**; `repair` deletes each one in a
    transaction: the Delete is guarded by `owner = <recorded owner>`, and a `ConditionCheck` requires that
    owner's account to be gone or to hold a different value — so a marker that became valid again in
    the meantime is kept.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    client.delete_item(TableName=table, Key={"PK": {"S": "ACCT#a1"}, "SK": {"S": "PROFILE"}})
    broken = uniq.audit(client, table)
    print(broken.orphan_markers[["marker", "owner", "reason"]].to_string(index=False))
    assert not broken.ok and len(broken.orphan_markers) == 2, "lesson broken: orphans not found"
    print(uniq.repair(client, table, broken))
    assert uniq.audit(client, table).ok, "repair left findings behind"
    """),
    md("""
    How would you *find* an account's markers? The source article suggests a Query on the `UNIQ#` prefix.
    That cannot work: a Query needs the **exact** partition key (`begins_with` is allowed only on the sort
    key), and every marker has its own partition key. What works: start from the account — its item lists
    its values, so you know each marker's full key and can `GetItem`/`BatchGetItem` them (that is
    `account_items`); or add a GSI keyed on `owner` to list every marker an account holds.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    try:
        client.query(TableName=table, KeyConditionExpression="begins_with(PK, :p)",
                     ExpressionAttributeValues={":p": {"S": "UNIQ#"}})
    except client.exceptions.ClientError as exc:
        print(exc.response["Error"]["Code"], "-", exc.response["Error"]["Message"])
    """),
    md("""
    ## 8 · Retry safely: ClientRequestToken

    A network blip can eat the response to a sign-up that DynamoDB **did** apply. botocore already adds a
    `ClientRequestToken` to every `TransactWriteItems` you send without one (the API model marks the field
    as an idempotency token, and botocore fills in a fresh uuid4) — but per *call*. It protects botocore's
    own automatic retries of that call, nothing more:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    member = client.meta.service_model.operation_model("TransactWriteItems").input_shape.members["ClientRequestToken"]
    print("idempotencyToken:", member.metadata.get("idempotencyToken"))
    """),
    md("""
    When *your* code retries — calls `register` again after an error — that is a new call: a new token
    and a new account id. DynamoDB sees a new request, and your user is told their own email is taken.
    An application-level retry must pin its own token and id: labkit's `Registration` fixes both, so a
    resend is the same request, which DynamoDB applies once and answers with success again. Here
    `lose_next_response` drops the answer after DynamoDB applied the sign-up.

    > 🔮 **Predict:** after the lost response, what does a naive retry (`register` again) get? And a
    > resend of the same `Registration`?
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    reset()
    flaky = conn.new_client()
    signup = uniq.prepare_registration(email=ADA, username="ada")
    uniq.lose_next_response(flaky)
    try:
        uniq.submit(flaky, table, signup)
    except Exception as exc:
        print("first send:", type(exc).__name__, "(but DynamoDB applied it)")
    try:  # the naive retry: a brand-new request
        uniq.register(flaky, table, email=ADA, username="ada")
    except ValueTaken as exc:
        print("naive retry:", exc)
    uniq.submit(flaky, table, signup)  # the resend: same id, same token
    print("resend: ok; accounts for", ADA, "=", accounts())
    assert accounts() == 1
    """),
    md("""
    **Answer:** the naive retry is told its own email and username are taken; the resend succeeds, and
    there is still one account. A token reused for a *different* request is refused:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    try:
        uniq.register(client, table, email="bob@babbage.io", username="bob", token=signup.token)
    except IdempotencyMismatch as exc:
        print(type(exc).__name__, exc.code)
    assert accounts("bob@babbage.io") == 0, "a reused token must not write a different request"
    """),
    md("""
    DynamoDB remembers a token for **10 minutes after the first request with it completed**. A resend
    after that is a *new* request: its guarded Puts find the markers it wrote itself, and it is cancelled
    (Optional D shows it). So resend promptly, and after a long outage read the account instead.

    That is the core path: jump to the **Summary and checklist** at the end, or read on.

    ---

    ## Optional A · A sign-up storm, before and after

    Sixteen workers, each with its own client, all sign up for the same 20 addresses
    (`user0@lovelace.io` … `user19@lovelace.io`) — first with check-then-write, then with
    `uniq.register`. This is not forced: the counts vary from run to run, so only the fix's invariant is
    asserted (every address ends with exactly one account, and the audit finds nothing).
    """),
    code("""
    # NBVAL_IGNORE_OUTPUT
    EMAILS = 20


    def storm_email(seq):
        return f"user{seq % EMAILS}@lovelace.io"


    def accounts_per_email():
        items = uniq.table_items(client, table)
        counts = items[items["PK"].str.startswith("ACCT#")].groupby("email").size()
        return counts.reindex([storm_email(i) for i in range(EMAILS)], fill_value=0)


    def naive_signup(c, worker, seq):
        return uniq.register_check_then_write(c, table, email=storm_email(seq), username=f"w{worker}-{seq}")


    def safe_signup(c, worker, seq):
        return uniq.register(c, table, email=storm_email(seq), username=f"w{worker}-{seq}")


    before = stress(naive_signup, conn=conn, threads=16, ops=EMAILS, setup=reset, progress=False)
    before_counts = accounts_per_email()
    after = stress(safe_signup, conn=conn, threads=16, ops=EMAILS, setup=reset, progress=False)
    after_counts = accounts_per_email()
    assert (after_counts == 1).all() and int(after["ok"].sum()) == EMAILS, "the fix is broken"
    assert uniq.audit(client, table).ok, "the fix is broken: the audit found stray markers"

    fig, axes = plt.subplots(1, 2, figsize=(10, 3), sharey=True)
    for ax, counts, title in ((axes[0], before_counts, "check-then-write"),
                              (axes[1], after_counts, "marker items in one transaction")):
        ax.bar(range(EMAILS), counts.values, color=["tab:red" if n > 1 else "tab:green" for n in counts])
        ax.axhline(1, color="black", linewidth=0.8, linestyle="--")
        ax.set_title(f"{title}: {int(counts.sum())} accounts")
        ax.set_xticks(range(0, EMAILS, 2))
        ax.set_xlabel("address: user<n>@lovelace.io")
    axes[0].set_ylabel("accounts per email")
    fig.suptitle("16 workers × 20 sign-ups for the same 20 addresses")
    plt.tight_layout()
    plt.show()
    """),
    md("""
    ## Optional B · Composite uniqueness: `UNIQUE(tenant, email)`

    "Uniqueness across several attributes" also means a *pair* that must be unique: one email may sign
    up in two tenants, but only once per tenant. The model is the same — **one marker keyed by both
    values**: `UNIQ#TENANT_EMAIL#<tenant>#<email>`. The registry takes a tuple as a field: its marker
    records the owner and the parts, a change of either part swaps it in the same transaction, and
    `ValueTaken` names the pair. `#` is legal in an email's local part, so a `#` inside a part is escaped
    (`\\#`): `("a#b", "c@x.io")` and `("a", "b#c@x.io")` stay two keys.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    reset()
    tenants = uniq.UniqueRegistry.connect(conn, fields={"username": "HANDLE", ("tenant", "email"): "TENANT_EMAIL"})
    tenants.register(tenant="acme", email=ADA, username="ada")
    tenants.register(tenant="globex", email=ADA, username="ada-globex")    # same email, another tenant: fine
    try:
        tenants.register(tenant="acme", email="Ada@Lovelace.io", username="ada2")
    except ValueTaken as exc:
        print("acme again:", exc)
    print([pk for pk in uniq.table_items(client, table)["PK"] if "TENANT" in pk])
    assert accounts() == 2 and tenants.audit().ok
    """),
    md("""
    ## Optional C · The article's transaction, sent as written

    The source article's `TransactWriteItems` — three Puts, each guarded by `attribute_not_exists(PK)` —
    is `uniq.SEED_TRANSACTION_JSON`; only the table name `accounts` is replaced by this lesson's table.
    Sending it twice: the second is cancelled on all three conditions.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    reset()
    for action in uniq.seed_transaction(table)["TransactItems"]:
        print("Put", json.dumps(action["Put"]["Item"]), "if", action["Put"]["ConditionExpression"])
    client.transact_write_items(**uniq.seed_transaction(table))
    try:
        client.transact_write_items(**uniq.seed_transaction(table))
    except client.exceptions.TransactionCanceledException as exc:
        print("second send:", [reason["Code"] for reason in exc.response["CancellationReasons"]])
    assert accounts() == 1
    seed_audit = uniq.audit(client, table)
    print(seed_audit)
    assert list(seed_audit.findings["kind"]) == ["ownerless_marker"] * 2, "lesson broken: one finding per lock"
    """),
    md("""
    The article's locks carry no `owner`. That blocks a second sign-up, but a lock cannot be released
    safely — a guarded Delete (`owner = <id>`) cannot tell whose lock it is. The audit names each
    finding by what it is: `ownerless_marker` (a marker without `owner`, reported once, with the account
    holding its value), `orphan_marker` (its owner is gone or holds another value), `missing_marker` (no
    marker item at all), `marker_owned_by_other` (the value's marker belongs to another account).
    `repair` hands each owner-less marker to the account holding its value, in a transaction guarded by "still no owner"
    and "the account still holds this value" — no delete-and-recreate gap in which someone else could
    take the value.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    print(uniq.repair(client, table, seed_audit))
    assert uniq.audit(client, table).ok, "repair did not give the article's locks an owner"
    """),
    md("""
    ## Optional D · A resend after the 10-minute token window

    To see the window close without waiting ten minutes, start a private embedded endpoint whose clock
    the notebook moves (`DynamoEngine(clock=...)`; it implements DynamoDB's documented rule). It runs
    locally whatever backend the rest of the notebook uses; on AWS you would wait the ten minutes.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    minutes = [0.0]
    endpoint = labkit.EmbeddedEndpoint(engine=labkit.DynamoEngine(clock=lambda: 60 * minutes[0])).start()
    try:
        window = labkit.connect(endpoint_url=endpoint.url, table_name="labkit-token-window")
        labkit.ensure_table(window)
        signup = uniq.prepare_registration(email=ADA, username="ada", account_id="a1")
        uniq.submit(window.client, window.table_name, signup)
        for after in (9, 11):
            minutes[0] = after
            try:
                uniq.submit(window.client, window.table_name, signup)
                print(f"resend after {minutes[0]:.0f} min: ok (answered from the token memory)")
            except StaleAccount as exc:
                print(f"resend after {minutes[0]:.0f} min: {type(exc).__name__}: {exc}")
    finally:
        endpoint.stop()
    """),
    md("""
    After 11 minutes the resend is a new request: its account Put and both marker Puts find the items it
    wrote itself and fail their conditions. labkit recognises "my own account already exists" and says
    so (`StaleAccount`) rather than telling the user their email is taken — the right next step is
    to read the account, not to register again.

    ---

    ## Summary

    - DynamoDB enforces uniqueness only on the primary key (`PK`, `SK`); every other "must be unique"
      is yours.
    - Check-then-write duplicates in 4 of 6 orders of two sign-ups — with a GSI Query **and** with a
      strongly consistent Scan. A GSI is a lookup, not a constraint.
    - Model each unique value as a marker item whose key is the normalised value (case folding is a
      policy); write the record and its markers in one `TransactWriteItems` (≤ 100 actions, ≤ 4 MB,
      twice the write units), every Put guarded by `attribute_not_exists(PK)`.
    - Read `CancellationReasons` positionally to tell the user *which* value is taken; validate input
      before any request.
    - Change and delete are transactions too; markers are released only by their owner; the audit finds
      strays. Find an account's markers from the account (or a GSI on `owner`), never by a prefix Query.
    - After a lost response, resend with the same `ClientRequestToken` and account id, within 10 minutes;
      the SDK's own token only covers the SDK's own retries.

    ## Checklist

    - [ ] Every unique attribute has a **marker item** keyed by its normalised value (pairs: one marker
          keyed by both, Optional B).
    - [ ] Record and markers go in **one transaction**, each Put guarded by `attribute_not_exists(PK)`;
          no check-then-write.
    - [ ] Values are **normalised** before they become keys; input is **validated** before any request (§6).
    - [ ] `CancellationReasons` are read by slot: the user learns *which* value is taken (§6).
    - [ ] Markers record their **owner**; change and delete release them guarded by it (§7).
    - [ ] An **audit** runs now and then; repair is guarded too (§7).
    - [ ] Retries **pin the token and the account id**, and happen within 10 minutes (§8).
    """),
]

if __name__ == "__main__":
    write("notebooks/02_uniqueness.ipynb", CELLS)
