"""GetItem latency and 16-thread throughput: labkit's endpoint vs moto, measured in one run; what
``--data DIR`` (every write fsync-ed before its answer) costs a write against memory; and what the
image history behind weak answers (on in the labkit profile) costs a GetItem and a PutItem, and
what a stale GetItem (``X-Labkit-Weak-Answer: stale-read``, and the named views ``behind=1`` and
``misses=KEY``) costs against a plain one measured in the same rounds.

    python benchmarks/bench_endpoint.py [--calls 1000] [--threads 16] [--per-thread 60] [--writes 300]
    python benchmarks/bench_endpoint.py --only-history      # the last section alone

Targets, all on 127.0.0.1 and all in this process (as in a notebook kernel):

* embedded     labkit's endpoint, labkit profile (atomic, fast path; labkit.embedded.start_endpoint)
* moto-server  moto's ThreadedMotoServer (werkzeug)
* canned       a uvicorn server that answers every request with a fixed GetItem
               response: what a boto3 client costs by itself (the floor)
* mock_aws     moto in-process, no HTTP at all (measured last: it resets moto's state)

Latency rounds alternate between the HTTP targets so that a busy machine slows them
alike. The writes section runs two endpoints side by side, one in memory and one with a data
directory (a temporary one), alternating PutItem rounds between them, then 16-thread PutItem
throughput on each. Nothing here asserts on time; it prints numbers and ratios.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import common

from labkit.embedded import start_endpoint

KEY = {"PK": {"S": "bench"}}
ITEM = {**KEY, "n": {"N": "42"}, "name": {"S": "Ada Lovelace"}}
CANNED = b'{"Item":{"PK":{"S":"bench"},"n":{"N":"42"},"name":{"S":"Ada Lovelace"}}}'


def client(url: str | None) -> Any:
    """A client that never retries, with a pool as wide as the throughput runs' threads."""
    return common.client(url, pool=64)


def prepare(url: str | None, table: str) -> None:
    c = client(url)
    common.create_hash_table(c, table)
    c.put_item(TableName=table, Item=ITEM)


def latencies(url: str | None, table: str, calls: int) -> list[float]:
    """Seconds per GetItem, one client, one thread."""
    c = client(url)
    for _ in range(20):
        c.get_item(TableName=table, Key=KEY)
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        c.get_item(TableName=table, Key=KEY)
        out.append(time.perf_counter() - start)
    return out


def put_latencies(url: str, table: str, calls: int, start: int) -> list[float]:
    """Seconds per PutItem (a new item each), one client, one thread."""
    c = client(url)
    out = []
    for i in range(start, start + calls):
        began = time.perf_counter()
        c.put_item(TableName=table, Item={"PK": {"S": f"w{i}"}, "n": {"N": str(i)}, "name": {"S": "Ada Lovelace"}})
        out.append(time.perf_counter() - began)
    return out


def throughput(url: str | None, table: str, threads: int, per_thread: int, write: bool = False) -> float:
    """GetItem (``write``: PutItem) requests per second from ``threads`` threads, each with its own client."""
    clients = [client(url) for _ in range(threads)]
    for c in clients:
        c.get_item(TableName=table, Key=KEY)
    barrier = threading.Barrier(threads + 1)

    def run(c: Any) -> None:
        if write:
            barrier.wait()
            name = threading.current_thread().name
            for i in range(per_thread):
                c.put_item(TableName=table, Item={"PK": {"S": f"t-{name}-{i}"}, "n": {"N": str(i)}})
            return
        barrier.wait()
        for _ in range(per_thread):
            c.get_item(TableName=table, Key=KEY)

    workers = [threading.Thread(target=run, args=(c,)) for c in clients]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    return threads * per_thread / (time.perf_counter() - start)


class _Canned:
    """An engine that answers everything with the same GetItem response."""

    def handle(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        import binascii

        return 200, {"content-type": "application/x-amz-json-1.0", "x-amz-crc32": str(binascii.crc32(CANNED))}, CANNED


@contextmanager
def http_targets() -> Iterator[dict[str, str]]:
    """Start the three HTTP targets; yield name -> URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    embedded = start_endpoint()
    canned = start_endpoint(engine=_Canned())  # type: ignore[arg-type]
    moto_server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto_server.start()
    host, port = moto_server.get_host_and_port()
    assert host == "127.0.0.1"
    try:
        yield {
            "embedded": embedded.url,
            "moto-server": f"http://{host}:{port}",
            "canned": canned.url,
        }
    finally:
        moto_server.stop()
        canned.stop()
        embedded.stop()


def summarise(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="GetItem calls per latency target")
    parser.add_argument("--rounds", type=int, default=4, help="alternating latency rounds")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--per-thread", type=int, default=60, help="calls per thread")
    parser.add_argument("--writes", type=int, default=300, help="PutItem calls per target (memory vs --data)")
    parser.add_argument("--only-history", action="store_true", help="only the image history's cost")
    args = parser.parse_args()
    began = time.perf_counter()
    if args.only_history:
        history(args.writes, args.rounds)
        print(f"\n(took {time.perf_counter() - began:.0f} s)")
        return

    lat: dict[str, list[float]] = {}
    tput: dict[str, float] = {}
    with http_targets() as urls:
        for name, url in urls.items():
            if name != "canned":
                prepare(url, f"bench-{name}")
        per_round = max(1, args.calls // args.rounds)
        for _ in range(args.rounds):
            for name, url in urls.items():
                lat.setdefault(name, []).extend(latencies(url, f"bench-{name}", per_round))
        for name, url in urls.items():
            tput[name] = throughput(url, f"bench-{name}", args.threads, args.per_thread)

    from moto import mock_aws

    with mock_aws():
        prepare(None, "bench-mock")
        lat["mock_aws"] = latencies(None, "bench-mock", per_round * args.rounds)
        tput["mock_aws"] = throughput(None, "bench-mock", args.threads, args.per_thread)

    print(
        f"GetItem, {per_round * args.rounds} calls per target; "
        f"{args.threads} threads x {args.per_thread} calls for throughput\n"
    )
    print(f"{'target':<12} {'median ms':>10} {'p95 ms':>8} {'req/s':>8}")
    for name in ("embedded", "moto-server", "mock_aws", "canned"):
        median, p95 = summarise(lat[name])
        print(f"{name:<12} {median:>10.2f} {p95:>8.2f} {tput[name]:>8.0f}")
    emb_median, _ = summarise(lat["embedded"])
    print("\nembedded vs ...   latency ratio (theirs / ours)   throughput ratio (ours / theirs)")
    for name in ("moto-server", "mock_aws", "canned"):
        median, _ = summarise(lat[name])
        print(f"  {name:<14} {median / emb_median:>14.2f}x {tput['embedded'] / tput[name]:>30.2f}x")
    writes(args.writes, args.rounds, args.threads, args.per_thread)
    history(args.writes, args.rounds)
    print(f"\n(took {time.perf_counter() - began:.0f} s)")


def writes(calls: int, rounds: int, threads: int, per_thread: int) -> None:
    """PutItem latency and throughput: the embedded endpoint in memory vs with --data (fsync per write)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="labkit-bench-data-") as data:
        memory, durable = start_endpoint(), start_endpoint(data=data)
        try:
            urls = {"memory": memory.url, "--data": durable.url}
            for name, url in urls.items():
                prepare(url, f"bench-{name}")
            lat: dict[str, list[float]] = {}
            per_round = max(1, calls // rounds)
            for r in range(rounds):
                for name, url in urls.items():
                    lat.setdefault(name, []).extend(put_latencies(url, f"bench-{name}", per_round, r * per_round))
            tput = {
                name: throughput(url, f"bench-{name}", threads, per_thread, write=True) for name, url in urls.items()
            }
        finally:
            durable.stop()
            memory.stop()
    print(f"\nPutItem, {per_round * rounds} calls per target; {threads} threads x {per_thread} calls for throughput")
    print(f"{'target':<12} {'median ms':>10} {'p95 ms':>8} {'req/s':>8}")
    for name in ("memory", "--data"):
        median, p95 = summarise(lat[name])
        print(f"{name:<12} {median:>10.2f} {p95:>8.2f} {tput[name]:>8.0f}")
    mem_median, _ = summarise(lat["memory"])
    data_median, _ = summarise(lat["--data"])
    print(
        f"--data / memory: median PutItem latency {data_median / mem_median:.2f}x, "
        f"throughput {tput['--data'] / tput['memory']:.2f}x"
    )


def history(calls: int, rounds: int) -> None:
    """The image history's cost: two labkit-profile endpoints, one with its history switched off,
    GetItem and PutItem rounds alternating between them; then a stale-read GetItem against a plain one."""
    with_history, without = start_endpoint(), start_endpoint()
    kept = without.engine.history
    assert kept is not None
    without.engine.store.listeners.remove(kept)
    without.engine.history = None  # and no weak answers: a plain labkit engine otherwise
    try:
        urls = {"history on": with_history.url, "history off": without.url}
        for name, url in urls.items():
            prepare(url, f"bench-{name.replace(' ', '-')}")
        gets: dict[str, list[float]] = {}
        puts: dict[str, list[float]] = {}
        per_round = max(1, calls // rounds)
        for r in range(rounds):
            for name, url in urls.items():
                table = f"bench-{name.replace(' ', '-')}"
                gets.setdefault(name, []).extend(latencies(url, table, per_round))
                puts.setdefault(name, []).extend(put_latencies(url, table, per_round, r * per_round))
        client(with_history.url).put_item(TableName="bench-history-on", Item={**ITEM, "n": {"N": "43"}})
        reads: dict[str, list[float]] = {form: [] for form in STALE_FORMS}
        readers = {form: _asking(with_history.url, form) for form in STALE_FORMS}
        for _ in range(rounds):
            for form, target in readers.items():
                out = reads[form]
                for _ in range(per_round):
                    began = time.perf_counter()
                    target.get_item(TableName="bench-history-on", Key=KEY)
                    out.append(time.perf_counter() - began)
    finally:
        without.stop()
        with_history.stop()
    print(f"\nImage history (weak answers), {per_round * rounds} calls per target")
    print(f"{'target':<12} {'GetItem median ms':>18} {'PutItem median ms':>18}")
    for name in urls:
        print(f"{name:<12} {summarise(gets[name])[0]:>18.2f} {summarise(puts[name])[0]:>18.2f}")
    on_get, off_get = summarise(gets["history on"])[0], summarise(gets["history off"])[0]
    on_put, off_put = summarise(puts["history on"])[0], summarise(puts["history off"])[0]
    print(f"history on / off: GetItem {on_get / off_get:.2f}x, PutItem {on_put / off_put:.2f}x")
    plain_ms = summarise(reads[PLAIN])[0]
    print("GetItem with X-Labkit-Weak-Answer / plain GetItem (same endpoint, same run):")
    for form in STALE_FORMS[1:]:
        ms = summarise(reads[form])[0]
        print(f"  {form:<44} {ms / plain_ms:.2f}x ({ms:.2f} ms vs {plain_ms:.2f} ms)")


PLAIN = "plain"
#: The stale GetItems measured against a plain one: the search, a named view (behind, misses).
STALE_FORMS = (
    PLAIN,
    "stale-read",
    "stale-read; behind=1",
    'stale-read; misses={"PK":{"S":"bench"}}',
)


def _asking(url: str, form: str) -> Any:
    """A client whose GetItems carry ``X-Labkit-Weak-Answer: form`` (``plain``: none)."""
    c = client(url)
    if form != PLAIN:
        c.meta.events.register(
            "before-sign.dynamodb.GetItem",
            lambda request, **_: request.headers.__setitem__("X-Labkit-Weak-Answer", form),
        )
    return c


if __name__ == "__main__":
    main()
