"""Tables that survive a restart (``--data DIR``): every kind of write is there after the endpoint stops
and starts on the same directory — items, indexes, TTL, tags, a stream's specification; a torn last
record is dropped with a message, a damaged one in the middle is an error naming the file and the
offset (nothing dropped); a directory labkit cannot use is refused at start with nothing written."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from labkit.embedded import start_endpoint
from labkit.endpoint.store import durable
from labkit.endpoint.store.durable import DamagedDataFile, DataDirError
from tests.endpoint.clients import raw_client
from tests.endpoint.tables import create_gsi, make_table, scan_all

LOG = durable.LOG


def _definition(client: Any, table: str) -> dict[str, Any]:
    """What must survive of DescribeTable (not its timestamps, ARNs or counts)."""
    described = client.describe_table(TableName=table)["Table"]
    return {
        "KeySchema": described["KeySchema"],
        "AttributeDefinitions": sorted(described["AttributeDefinitions"], key=lambda a: a["AttributeName"]),
        "Billing": described.get("BillingModeSummary", {}).get("BillingMode"),
        "GSI": [(i["IndexName"], i["KeySchema"], i["Projection"]) for i in described.get("GlobalSecondaryIndexes", [])],
        "LSI": [(i["IndexName"], i["KeySchema"], i["Projection"]) for i in described.get("LocalSecondaryIndexes", [])],
        "Stream": described.get("StreamSpecification"),
    }


def test_restart__every_kind_of_write__is_there_after(tmp_path: Path) -> None:
    """Puts (binary, numbers, nested), updates, deletes, a batch and a transaction, then a GSI added, TTL and
    tags set, a second table deleted: after a restart on the same directory every table, item, index, TTL
    setting and tag is as it was; the stream is enabled again (its records are not kept)."""
    with start_endpoint(data=tmp_path) as endpoint:
        client = raw_client(endpoint.url)
        table = make_table(client, gsi=True, lsi=True, stream=True)
        gone = make_table(client)
        client.put_item(
            TableName=table,
            Item={
                "PK": {"S": "a"},
                "SK": {"S": "1"},
                "email": {"S": "a@x"},
                "at": {"S": "2026"},
                "blob": {"B": b"\x00\xffbytes"},
                "set": {"BS": [b"x", b"y"]},
                "n": {"N": "12345678901234567890.123"},
                "m": {"M": {"l": {"L": [{"S": "deep"}, {"NULL": True}, {"BOOL": False}]}}},
            },
        )
        client.put_item(TableName=table, Item={"PK": {"S": "a"}, "SK": {"S": "2"}, "v": {"N": "1"}})
        client.update_item(
            TableName=table,
            Key={"PK": {"S": "a"}, "SK": {"S": "2"}},
            UpdateExpression="SET v = v + :one, email = :e",
            ExpressionAttributeValues={":one": {"N": "1"}, ":e": {"S": "b@x"}},
        )
        client.put_item(TableName=table, Item={"PK": {"S": "doomed"}, "SK": {"S": "1"}})
        client.delete_item(TableName=table, Key={"PK": {"S": "doomed"}, "SK": {"S": "1"}})
        client.batch_write_item(
            RequestItems={table: [{"PutRequest": {"Item": {"PK": {"S": "b"}, "SK": {"S": str(i)}}}} for i in range(3)]}
        )
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": {"PK": {"S": "t"}, "SK": {"S": "1"}}}},
                {"Delete": {"TableName": table, "Key": {"PK": {"S": "b"}, "SK": {"S": "0"}}}},
            ]
        )
        create_gsi(client, table, "g2-index", "g2", kind="N", projection="KEYS_ONLY")
        client.update_time_to_live(TableName=table, TimeToLiveSpecification={"AttributeName": "exp", "Enabled": True})
        arn = client.describe_table(TableName=table)["Table"]["TableArn"]
        client.tag_resource(ResourceArn=arn, Tags=[{"Key": "team", "Value": "blue"}, {"Key": "tmp", "Value": "1"}])
        client.untag_resource(ResourceArn=arn, TagKeys=["tmp"])
        client.delete_table(TableName=gone)
        before_items = scan_all(client, table)
        before_definition = _definition(client, table)
        stream_before = client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    with start_endpoint(data=tmp_path) as endpoint:
        client = raw_client(endpoint.url)
        assert client.list_tables()["TableNames"] == [table]
        assert scan_all(client, table) == before_items
        assert _definition(client, table) == before_definition
        described = client.describe_table(TableName=table)["Table"]
        assert described["LatestStreamArn"] != stream_before  # a new stream: its records are not kept
        ttl = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "exp")
        tags = client.list_tags_of_resource(ResourceArn=described["TableArn"])["Tags"]
        assert tags == [{"Key": "team", "Value": "blue"}]
        found = client.query(
            TableName=table,
            IndexName="email-index",
            KeyConditionExpression="email = :e",
            ExpressionAttributeValues={":e": {"S": "b@x"}},
        )["Items"]
        assert [(i["PK"]["S"], i["SK"]["S"], i["v"]["N"]) for i in found] == [("a", "2", "2")]
        item = client.get_item(TableName=table, Key={"PK": {"S": "a"}, "SK": {"S": "1"}})["Item"]
        assert item["blob"] == {"B": b"\x00\xffbytes"} and item["n"] == {"N": "12345678901234567890.123"}


def test_restart__a_table_made_again_under_its_name__has_only_its_new_items(tmp_path: Path) -> None:
    """DeleteTable then CreateTable of the same name: after a restart the old table's items are not back."""
    with start_endpoint(data=tmp_path) as endpoint:
        client = raw_client(endpoint.url)
        table = make_table(client)
        client.put_item(TableName=table, Item={"PK": {"S": "old"}, "SK": {"S": "1"}})
        client.delete_table(TableName=table)
        make_table(client, name=table)
        client.put_item(TableName=table, Item={"PK": {"S": "new"}, "SK": {"S": "1"}})
    with start_endpoint(data=tmp_path) as endpoint:
        assert scan_all(raw_client(endpoint.url), table) == [{"PK": {"S": "new"}, "SK": {"S": "1"}}]


def _filled(tmp_path: Path, n: int = 3) -> str:
    with start_endpoint(data=tmp_path) as endpoint:
        client = raw_client(endpoint.url)
        table = make_table(client)
        for i in range(n):
            client.put_item(TableName=table, Item={"PK": {"S": f"k{i}"}, "SK": {"S": "1"}})
    return table


def test_torn_last_record__dropped_with_a_message__the_rest_kept(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A last record cut short (the process died while writing it: it was never acknowledged) is dropped at
    start, with a message naming the file and the byte; every record before it is there."""
    table = _filled(tmp_path)
    log = tmp_path / LOG
    whole = log.stat().st_size
    with open(log, "ab") as handle:
        handle.write(durable.frame({"t": "items", "a": "123456789012", "r": "us-east-1", "c": []})[:-7])
    capfd.readouterr()
    with start_endpoint(data=tmp_path) as endpoint:
        assert len(scan_all(raw_client(endpoint.url), table)) == 3
    err = capfd.readouterr().err
    assert f"{log}: dropped a torn last record at byte {whole}" in err
    assert log.stat().st_size == whole


def test_damaged_record_in_the_middle__error_names_file_and_offset__nothing_dropped(tmp_path: Path) -> None:
    """A garbled record with records after it: DamagedDataFile naming the file and the byte offset; the file is
    left exactly as it was (nothing after the damage is dropped)."""
    _filled(tmp_path)
    log = tmp_path / LOG
    data = bytearray(log.read_bytes())
    lines = bytes(data).split(b"\n")
    offset = len(lines[0]) + 1 + len(lines[1]) + 1  # the second record
    data[offset + 20] ^= 0x01
    log.write_bytes(bytes(data))
    with pytest.raises(DamagedDataFile) as caught:
        start_endpoint(data=tmp_path)
    assert f"{log} is damaged at byte {offset}" in str(caught.value)
    assert "dropped nothing" in str(caught.value)
    assert log.read_bytes() == bytes(data)


def test_newer_format__says_it_cannot_read_it(tmp_path: Path) -> None:
    """A data file of a newer format version: a clear error naming the version and what to do."""
    (tmp_path / LOG).write_bytes(b'{"format":"labkit-data","version":99}\n')
    with pytest.raises(DataDirError) as caught:
        start_endpoint(data=tmp_path)
    assert "written by a newer labkit (data format version 99)" in str(caught.value)
    assert "upgrade labkit" in str(caught.value)


def test_format_version_1__a_known_file__reads(tmp_path: Path) -> None:
    """A version-1 log written by hand (as an older labkit wrote it) is read: the format is the contract."""
    key = {"PK": {"S": "k"}}
    table = {
        "TableName": "kept",
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
    blob = base64.b64encode(b"\x01\x02").decode()
    records: list[dict[str, Any]] = [
        {"t": "tables", "a": "123456789012", "r": "us-east-1", "d": {"kept": table}, "new": {"kept": True}},
        {"t": "items", "a": "123456789012", "r": "us-east-1", "c": [["kept", key, {**key, "b": {"B": blob}}]]},
    ]
    framed = b"".join(durable.frame(record) for record in records)
    (tmp_path / LOG).write_bytes(b'{"format":"labkit-data","version":1}\n' + framed)
    with start_endpoint(data=tmp_path) as endpoint:
        assert scan_all(raw_client(endpoint.url), "kept") == [{"PK": {"S": "k"}, "b": {"B": b"\x01\x02"}}]


def test_compaction__a_big_log_becomes_a_snapshot__same_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past COMPACT_BYTES the log is folded into a snapshot at start (written aside, renamed): the tables are
    the same, the log starts again, and a third start reads snapshot and log together."""
    table = _filled(tmp_path, n=20)
    monkeypatch.setattr(durable, "COMPACT_BYTES", 100)
    with start_endpoint(data=tmp_path) as endpoint:
        client = raw_client(endpoint.url)
        assert len(scan_all(client, table)) == 20
        client.put_item(TableName=table, Item={"PK": {"S": "after"}, "SK": {"S": "1"}})
    assert (tmp_path / durable.SNAPSHOT).exists()
    monkeypatch.setattr(durable, "COMPACT_BYTES", 10**9)
    with start_endpoint(data=tmp_path) as endpoint:
        assert len(scan_all(raw_client(endpoint.url), table)) == 21


# --- a directory labkit cannot use: one clear error at start, nothing written --------------------


def test_data_is_a_file__refused__the_file_untouched(tmp_path: Path) -> None:
    target = tmp_path / "not-a-dir"
    target.write_bytes(b"mine")
    with pytest.raises(DataDirError) as caught:
        start_endpoint(data=target)
    assert str(caught.value) == f"--data {target}: is a file, not a directory; point --data at a directory"
    assert target.read_bytes() == b"mine" and sorted(tmp_path.iterdir()) == [target]


def test_data_held_by_another_endpoint__refused__nothing_written(tmp_path: Path) -> None:
    """A second endpoint on a directory another holds (flock): refused; the first one's log is unchanged."""
    with start_endpoint(data=tmp_path) as endpoint:
        make_table(raw_client(endpoint.url))
        log = (tmp_path / LOG).read_bytes()
        with pytest.raises(DataDirError) as caught:
            start_endpoint(data=tmp_path)
        assert "another labkit endpoint holds this directory" in str(caught.value)
        assert (tmp_path / LOG).read_bytes() == log
    with start_endpoint(data=tmp_path):  # released when the first stopped
        pass


def test_cli__data_not_writable__one_line_error_exit_2_nothing_written(tmp_path: Path) -> None:
    """`labkit serve --data DIR` as a user who cannot write DIR (the nobody user, run with setpriv): one line,
    exit 2, nothing in DIR."""
    setpriv = "/usr/bin/setpriv"
    if os.geteuid() != 0 or not os.path.exists(setpriv):
        pytest.skip("needs root and setpriv to run labkit as a user who cannot write the directory")
    base = Path(tempfile.mkdtemp(prefix="labkit-unwritable-", dir="/tmp"))  # /tmp: nobody can reach it
    os.chmod(base, 0o755)
    locked = base / "locked"
    locked.mkdir(mode=0o755)
    command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "labkit.commands.cli"]
    reach = subprocess.run(
        [*command[:-2], "-c", "import labkit.commands.cli"], capture_output=True, timeout=60, cwd="/"
    )
    if reach.returncode != 0:
        pytest.skip("the nobody user cannot import this environment's labkit (a venv under a private home)")
    out = subprocess.run(
        [*command, "serve", "--port", "0", "--data", str(locked)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        env={**os.environ, "HOME": "/tmp"},
    )
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert lines == [f"labkit: error: --data {locked}: the directory is not writable by this user; choose another"]
    assert list(locked.iterdir()) == []
    shutil.rmtree(base)


def test_cli__data_is_a_file__one_line_error_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before anything listens (the command's own main, as the other argument errors are tested)."""
    from labkit.commands.cli import main

    target = tmp_path / "file"
    target.write_text("x")
    assert main(["serve", "--port", "0", "--data", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"labkit: error: --data {target}: is a file, not a directory; point --data at a directory"
    assert target.read_text() == "x"


def test_cli__labkit_data__serve_keeps_its_tables_there_across_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`LABKIT_DATA=DIR labkit serve` (no --data) keeps its tables in DIR: a table made in one run is there in
    the next; what it prints says where they are kept. `labkit lab` reads --data and LABKIT_DATA the same way."""
    from labkit.commands.cli import _data_dir, build_parser

    monkeypatch.setenv("LABKIT_DATA", str(tmp_path))
    assert _data_dir(build_parser().parse_args(["lab", "--data", "/x"])) == "/x"
    assert _data_dir(build_parser().parse_args(["lab"])) == str(tmp_path)
    env = dict(os.environ)
    made: str | None = None
    listed: list[list[str]] = []
    for _ in range(2):
        process = subprocess.Popen(
            [sys.executable, "-m", "labkit.commands.cli", "serve", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        url = lines[0].split("listening on ")[1].split()[0]
        assert lines[1].strip() == f"tables kept in {tmp_path} across restarts"
        client = raw_client(url)
        made = made or make_table(client)
        listed.append(client.list_tables()["TableNames"])
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert listed == [[made], [made]]
