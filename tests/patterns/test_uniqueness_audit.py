"""Audit finds orphan, missing and shared markers; repair fixes each with a guarded transaction."""

from __future__ import annotations

from labkit.patterns import uniqueness as u
from labkit.shared.backend import Connection
from tests.patterns.signups import ADA, TENANT_FIELDS, drop, items, keys, set_email, stored


def test_audit__healthy_table__finds_nothing(tconn: Connection) -> None:
    """Registered, changed and deleted accounts leave no finding."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    b = u.register(tconn.client, tconn.table_name, email="b@b.io", username="b")
    u.change_email(tconn.client, tconn.table_name, a.account_id, "new@lovelace.io")
    u.delete_account(tconn.client, tconn.table_name, b.account_id)
    report = u.audit(tconn.client, tconn.table_name)
    assert report.ok and report.findings.empty and report.summary() == "audit: no findings"


def test_audit__account_deleted_without_its_markers__finds_two_orphans(tconn: Connection) -> None:
    """Deleting only the account strands both markers; the audit names them."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    drop(tconn, f"ACCT#{a.account_id}", "PROFILE")
    report = u.audit(tconn.client, tconn.table_name)
    assert not report.ok
    assert list(report.orphan_markers["marker"]) == [f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"]


def test_audit__marker_deleted__finds_missing_marker(tconn: Connection) -> None:
    """An account whose value has no marker is reported as missing_marker."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    drop(tconn, "UNIQ#HANDLE#ada", "LOCK")
    report = u.audit(tconn.client, tconn.table_name)
    assert list(report.missing_markers["account"]) == [f"ACCT#{a.account_id}"]
    assert list(report.missing_markers["attribute"]) == ["username"]


def test_repair__orphan_and_missing_markers__fixes_both(tconn: Connection) -> None:
    """Orphans are deleted, missing markers created; afterwards the audit is clean."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    b = u.register(tconn.client, tconn.table_name, email="b@b.io", username="b")
    drop(tconn, f"ACCT#{a.account_id}", "PROFILE")
    drop(tconn, "UNIQ#EMAIL#b@b.io", "LOCK")
    done = u.repair(tconn.client, tconn.table_name)
    assert done.deleted == [f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"]
    assert done.created == ["UNIQ#EMAIL#b@b.io"] and done.conflicts == []
    assert u.audit(tconn.client, tconn.table_name).ok
    assert keys(tconn) == sorted([f"ACCT#{b.account_id}", "UNIQ#EMAIL#b@b.io", "UNIQ#HANDLE#b"])


def test_repair__orphan_whose_owner_took_the_value_back__is_not_deleted(tconn: Connection) -> None:
    """A stale report cannot delete a marker its owner holds again: the guard refuses."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    account = u.get_account(tconn.client, tconn.table_name, a.account_id)
    drop(tconn, f"ACCT#{a.account_id}", "PROFILE")
    stale = u.audit(tconn.client, tconn.table_name)
    tconn.client.put_item(TableName=tconn.table_name, Item={k: {"S": str(v)} for k, v in (account or {}).items()})
    done = u.repair(tconn.client, tconn.table_name, stale)
    assert done.deleted == [] and len(done.conflicts) == 2
    assert u.audit(tconn.client, tconn.table_name).ok


def test_repair__missing_marker_held_by_another__reports_and_does_not_overwrite(tconn: Connection) -> None:
    """Two accounts on one email (check-then-write): the marker stays with its owner, a conflict is reported."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    dup = u.register_check_then_write(tconn.client, tconn.table_name, email="x@x.io", username="ada2")
    set_email(tconn, dup, ADA)
    report = u.audit(tconn.client, tconn.table_name)
    done = u.repair(tconn.client, tconn.table_name, report)
    assert sorted(report.findings["kind"]) == ["marker_owned_by_other", "missing_marker", "several_owners"]
    assert f"UNIQ#EMAIL#{ADA}" not in done.created
    assert any("held by" in c for c in done.conflicts) and any("not overwritten" in c for c in done.conflicts)
    assert {row["PK"]: row for row in items(tconn)}[f"UNIQ#EMAIL#{ADA}"]["owner"] == a.account_id


def test_repair__seed_locks_without_owner__are_given_to_their_account(tconn: Connection) -> None:
    """The article's locks carry no owner; repair adopts them instead of deleting and re-creating."""
    u.send_seed_transaction(tconn.client, tconn.table_name)
    seed = u.audit(tconn.client, tconn.table_name)
    assert list(seed.findings["kind"]) == ["ownerless_marker", "ownerless_marker"]
    assert seed.missing_markers.empty
    done = u.repair(tconn.client, tconn.table_name)
    assert done.adopted == [f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"] and done.deleted == []
    assert u.audit(tconn.client, tconn.table_name).ok


def test_audit_report__long_reason__printed_in_full(tconn: Connection) -> None:
    """str(), frame() and the notebook's HTML show every column in full, never cut with '...'."""
    long_name = "a" * 80
    a = u.register(tconn.client, tconn.table_name, email=f"{long_name}@lovelace.io", username="ada")
    u.register(tconn.client, tconn.table_name, email=ADA, username="bob")
    set_email(tconn, a.account_id, ADA)
    report = u.audit(tconn.client, tconn.table_name)
    reason = f"account ACCT#{a.account_id} holds '{ADA}'"
    assert reason in str(report) and reason in report.frame("orphan_markers") and reason in report._repr_html_()
    assert f"UNIQ#EMAIL#{long_name}@lovelace.io" in report.frame("orphan_markers")


def test_audit__composite_marker_deleted__missing_marker_names_the_pair_and_repair_recreates_it(
    tconn: Connection,
) -> None:
    """A lost pair marker is one missing_marker for tenant+email; repair puts it back with its parts."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    a = reg.register(tenant="acme", email=ADA, username="ada")
    drop(tconn, f"UNIQ#TENANT_EMAIL#acme#{ADA}", "LOCK")
    report = reg.audit()
    assert report.findings[["kind", "attribute", "value"]].to_dict("records") == [
        {"kind": "missing_marker", "attribute": "tenant+email", "value": f"acme#{ADA}"}
    ]
    done = reg.repair(report)
    assert done.created == [f"UNIQ#TENANT_EMAIL#acme#{ADA}"] and reg.audit().ok
    marker = stored(tconn, f"UNIQ#TENANT_EMAIL#acme#{ADA}")
    assert marker is not None and (marker["owner"], marker["parts"]) == (a.account_id, {"tenant": "acme", "email": ADA})


def test_audit__two_accounts_on_one_pair__several_owners_names_the_pair(tconn: Connection) -> None:
    """Two accounts written around the registry with the same (tenant, email): several_owners for the pair."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    a = reg.register(tenant="acme", email=ADA, username="ada")
    b = reg.register(tenant="globex", email=ADA, username="bob")
    tconn.client.update_item(
        TableName=tconn.table_name,
        Key={"PK": {"S": f"ACCT#{b.account_id}"}, "SK": {"S": "PROFILE"}},
        UpdateExpression="SET tenant = :t",
        ExpressionAttributeValues={":t": {"S": "acme"}},
    )
    findings = reg.audit().findings
    dup = findings[findings["kind"] == "several_owners"]
    assert dup[["attribute", "value"]].to_dict("records") == [{"attribute": "tenant+email", "value": f"acme#{ADA}"}]
    assert set(dup.iloc[0]["records"]) == {f"ACCT#{a.account_id}", f"ACCT#{b.account_id}"}


def test_repair__ownerless_composite_marker__adopted_with_owner_and_parts(tconn: Connection) -> None:
    """A pair marker that lost its owner is one ownerless_marker; repair gives it owner and parts."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    a = reg.register(tenant="acme", email=ADA, username="ada")
    pk = f"UNIQ#TENANT_EMAIL#acme#{ADA}"
    tconn.client.put_item(TableName=tconn.table_name, Item={"PK": {"S": pk}, "SK": {"S": "LOCK"}})
    report = reg.audit()
    assert list(report.findings["kind"]) == ["ownerless_marker"] and report.missing_markers.empty
    assert reg.repair(report).adopted == [pk]
    assert stored(tconn, pk) == {
        "PK": pk,
        "SK": "LOCK",
        "owner": a.account_id,
        "field": "tenant+email",
        "value": f"acme#{ADA}",
        "parts": {"tenant": "acme", "email": ADA},
    }
    assert reg.audit().ok
