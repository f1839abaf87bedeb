"""Which items a DynamoDB call touches, from the table's key schema: what explore's conflicts stand on.

An item is ``(table, hash key value, range key value)``: the key attributes come from the table's
``KeySchema`` (DescribeTable, once per table per exploration: :class:`KeySchemas`), never guessed
from the attributes a request happens to carry — a PutItem's ``Item`` holds the key among other
attributes, and a table may be keyed ``id``, ``user_id`` or ``pk``/``sk``. The items a request
names come from the operation catalogue (:func:`labkit.shared.catalogue.item_keys`: Key, Item, each
action of a transaction — ConditionCheck reads — each key of a batch).

What each kind of call touches (:func:`accesses`):

* Get/Put/Update/DeleteItem, TransactGet/TransactWriteItems, BatchGet/BatchWriteItem: each item
  they name, read or written;
* Query on the table whose key condition names the partition (``#pk = :v``, or legacy
  ``KeyConditions`` ``EQ``): every item of that partition, read; a Query on an index, or one
  whose partition cannot be read from the request, and Scan: the whole table, read;
* PartiQL (ExecuteStatement, BatchExecuteStatement, ExecuteTransaction): a statement whose WHERE
  names the full key with ``=`` (ANDed; ``?`` parameters read from ``Parameters``), or an INSERT
  whose VALUE holds it, touches that item; any other statement its whole table. SELECT and
  EXISTS read, the others write. The parser here reads only that much (the race lab may not
  import the engine's PartiQL parser);
* a TransactWriteItems with a ClientRequestToken also writes that token (two requests with one
  token meet at DynamoDB's idempotency check);
* every other operation (the control plane, an unknown operation): everything, written.

A table whose key schema cannot be read (it does not exist yet: the call itself gets DynamoDB's
ResourceNotFoundException, as it would) counts as touched whole. Anything this module cannot
read exactly is widened, never narrowed: a wider access costs runs, a narrower one a missed race.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..shared.catalogue import CATALOGUE, Op, item_keys
from ..shared.intercept import bound
from ..shared.partition_keys import canonical_sent

if TYPE_CHECKING:
    from ..shared.backend import Connection

#: A key attribute's value, canonical: (type, text) — numbers as DynamoDB stores them, binaries as base64.
KeyValue = tuple[str, str]
#: A table's key attributes: (hash name, range name or None).
KeyNames = tuple[str, str | None]
#: The pseudo-table every control-plane call writes (it meets every access).
EVERYTHING = "*"
#: The pseudo-table of ClientRequestTokens.
TOKENS = "\0token"


@dataclass(frozen=True)
class Access:
    """Part of what one call touches: an item, a partition, or a whole table; read or written.

    ``hash`` None: the whole table. ``range`` None with a hash: the whole partition (on a
    hash-only table, that is the item).
    """

    table: str
    hash: KeyValue | None
    range: KeyValue | None
    write: bool

    def meets(self, other: Access) -> bool:
        """Do the two touch a common item?"""
        if EVERYTHING in (self.table, other.table):
            return True
        if self.table != other.table:
            return False
        if self.hash is None or other.hash is None:
            return True
        if self.hash != other.hash:
            return False
        return self.range is None or other.range is None or self.range == other.range

    def label(self) -> str:
        if self.table == EVERYTHING:
            return "everything"
        if self.hash is None:
            return f"{self.table}: every item"
        parts = [self.hash[1]] + ([self.range[1]] if self.range is not None else [])
        return f"{self.table}: {'/'.join(parts)}"


def conflict(a: frozenset[Access], b: frozenset[Access]) -> bool:
    """Two calls' accesses conflict: a common item, and at least one of the two writes it."""
    return any((x.write or y.write) and x.meets(y) for x in a for y in b)


def canonical(av: Any) -> KeyValue | None:
    """A key attribute value as the call holds it (``{"S": "x"}``, ``{"N": "1.0"}``, ``{"B": b"..."}``), canonical.

    The engine's own identity (:func:`labkit.shared.partition_keys.canonical_sent`): ``-0`` is ``0``,
    ``1E0`` is ``1``, a B given as text is its UTF-8 bytes, as botocore sends it.
    """
    return canonical_sent(av)


# ---------------------------------------------------------------- key schemas


class KeySchemas:
    """Each table's key attributes, read with DescribeTable once per table and kept.

    Asked from any thread: the DescribeTable is made unbound (never gated, never a turn), with a
    client for the calling client's region. A table that cannot be described (it does not exist,
    or access is denied) is not kept: it counts as touched whole, and is asked about again later.
    """

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.known: dict[tuple[str | None, str], KeyNames] = {}
        self.local: dict[tuple[str | None, str], frozenset[str]] = {}  # each table's local secondary indexes
        self.asked = 0
        self._clients: dict[str | None, Any] = {}
        self._lock = threading.Lock()

    def _client(self, region: str | None) -> Any:
        if region is None or region == self.conn.region:
            return self.conn.client
        if region not in self._clients:
            from ..shared.backend import Connection

            other = Connection(self.conn.backend, self.conn.endpoint_url, region, self.conn.table_name)
            self._clients[region] = other.new_client()
        return self._clients[region]

    def __call__(self, region: str | None, table: str) -> KeyNames | None:
        found = self.known.get((region, table))
        if found is not None:
            return found
        with self._lock:
            found = self.known.get((region, table))
            if found is not None:
                return found
            self.asked += 1
            try:
                with bound(None):
                    described = self._client(region).describe_table(TableName=table)["Table"]
                schema = described["KeySchema"]
                local = frozenset(i["IndexName"] for i in described.get("LocalSecondaryIndexes") or ())
            except Exception:  # noqa: BLE001  # no such table, no permission: the whole table, asked again later
                return None
            names = {k["KeyType"]: k["AttributeName"] for k in schema}
            if "HASH" not in names:
                return None
            found = (names["HASH"], names.get("RANGE"))
            self.local[(region, table)] = local
            self.known[(region, table)] = found
            return found

    def global_index(self, region: str | None, table: str, index: str) -> bool:
        """Is ``index`` not one of the table's local secondary indexes (a global one, for a read that names it)?"""
        if self(region, table) is None:
            return False
        return index not in self.local.get((region, table), frozenset())


SchemaOf = Callable[[str], "KeyNames | None"]


def _item(table: str, attrs: Mapping[str, Any], write: bool, schema_of: SchemaOf) -> Access:
    names = schema_of(table)
    if names is None:
        return Access(table, None, None, write)
    hash_name, range_name = names
    hash_value = canonical(attrs.get(hash_name))
    range_value = canonical(attrs.get(range_name)) if range_name is not None else None
    if hash_value is None or (range_name is not None and range_value is None):
        return Access(table, None, None, write)  # a malformed key: DynamoDB refuses it; widened all the same
    return Access(table, hash_value, range_value, write)


def item_access(table: str, attrs: Mapping[str, Any], write: bool, schema_of: SchemaOf) -> Access:
    """The item ``attrs`` (a Key, or an Item holding one) names in ``table``, by the table's key schema.

    ``hash`` None: the schema could not be read, or the key is malformed (the whole table)."""
    return _item(table, attrs, write, schema_of)


# ---------------------------------------------------------------- Query

_TOKEN = re.compile(r"\s*(#[A-Za-z0-9_]+|:[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_.\-]*|<=|>=|<>|[=<>(),])")


def _tokens(text: str) -> list[str] | None:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        out.append(m.group(1))
        pos = m.end()
    return out


def _partition(params: Mapping[str, Any], hash_name: str) -> KeyValue | None:
    """The partition a Query's key condition names (``hash = :v``), or None."""
    legacy = params.get("KeyConditions")
    if isinstance(legacy, Mapping):
        cond = legacy.get(hash_name)
        if isinstance(cond, Mapping) and cond.get("ComparisonOperator") == "EQ":
            values = cond.get("AttributeValueList") or []
            return canonical(values[0]) if len(values) == 1 else None
        return None
    text = params.get("KeyConditionExpression")
    if not isinstance(text, str):
        return None
    tokens = _tokens(text)
    if tokens is None:
        return None
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    flat = [t for t in tokens if t not in ("(", ")")]
    for i in range(1, len(flat) - 1):
        if flat[i] != "=":
            continue
        left, right = flat[i - 1], flat[i + 1]
        for name, value in ((left, right), (right, left)):
            resolved = names.get(name) if name.startswith("#") else name
            if resolved == hash_name and value.startswith(":") and value in values:
                return canonical(values[value])
    return None


def _query(params: Mapping[str, Any], schema_of: SchemaOf) -> Access | None:
    table = params.get("TableName")
    if not isinstance(table, str):
        return None
    names = schema_of(table)
    if names is None or params.get("IndexName"):
        return Access(table, None, None, False)  # an index's partition is not the table's
    return Access(table, _partition(params, names[0]), None, False)


# ---------------------------------------------------------------- PartiQL

_PQL = re.compile(
    r"""\s*(?:
        (?P<str>'(?:[^']|'')*')
      | (?P<qid>"(?:[^"]|"")*")
      | (?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op><>|!=|<=|>=|\|\||[=<>?{}\[\](),.:;*+\-/])
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str

    @property
    def word(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


def _pql_tokens(text: str) -> list[_Tok] | None:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _PQL.match(text, pos)
        if m is None:
            return None
        kind = m.lastgroup or "op"
        out.append(_Tok(kind, m.group(kind)))
        pos = m.end()
    return out


def _unquote(tok: _Tok) -> str:
    if tok.kind == "qid":
        return tok.text[1:-1].replace('""', '"')
    return tok.text


class _Statement:
    """What identity needs of one PartiQL statement: its table, read or write, the key it names."""

    def __init__(self, tokens: list[_Tok], parameters: Sequence[Any]) -> None:
        self.tokens = tokens
        self.parameters = list(parameters)
        # every ``?`` in the statement, in order, is the next parameter
        self.param_at: dict[int, Any] = {}
        n = 0
        for i, tok in enumerate(tokens):
            if tok.kind == "op" and tok.text == "?":
                self.param_at[i] = self.parameters[n] if n < len(self.parameters) else None
                n += 1

    def value(self, i: int) -> KeyValue | None:
        tok = self.tokens[i]
        if tok.kind == "op" and tok.text == "?":
            return canonical(self.param_at.get(i))
        if tok.kind == "str":
            return ("S", tok.text[1:-1].replace("''", "'"))
        if tok.kind == "num":
            return canonical({"N": tok.text})
        return None

    def table_after(self, i: int) -> tuple[str | None, bool]:
        """The table named at token i, and whether an index follows it (``"t"."index"``)."""
        if i >= len(self.tokens) or self.tokens[i].kind not in ("qid", "word"):
            return None, False
        indexed = (
            i + 2 < len(self.tokens) and self.tokens[i + 1].text == "." and self.tokens[i + 2].kind in ("qid", "word")
        )
        return _unquote(self.tokens[i]), indexed

    def where_equalities(self, start: int) -> dict[str, KeyValue] | None:
        """``name = value`` conjuncts of the WHERE clause from token ``start``; None if it has OR/NOT."""
        found: dict[str, KeyValue] = {}
        toks = self.tokens
        end = next((j for j in range(start, len(toks)) if toks[j].word == "RETURNING"), len(toks))
        if any(t.word in ("OR", "NOT") for t in toks[start:end]):
            return None
        flat = [j for j in range(start, end) if toks[j].text not in ("(", ")")]
        for pos in range(1, len(flat) - 1):
            j = flat[pos]
            if toks[j].text != "=":
                continue
            left, right = flat[pos - 1], flat[pos + 1]
            for name_at, value_at in ((left, right), (right, left)):
                if toks[name_at].kind in ("qid", "word") and toks[name_at].word not in ("AND", "WHERE"):
                    value = self.value(value_at)
                    if value is not None:
                        found.setdefault(_unquote(toks[name_at]), value)
        return found

    def insert_value(self, start: int) -> dict[str, KeyValue]:
        """The top-level ``'name': value`` pairs of an INSERT's VALUE tuple from token ``start``."""
        toks, found, depth = self.tokens, {}, 0
        for j in range(start, len(toks)):
            t = toks[j].text
            if t in ("{", "["):
                depth += 1
            elif t in ("}", "]"):
                depth -= 1
            elif depth == 1 and toks[j].kind == "str" and j + 2 < len(toks) and toks[j + 1].text == ":":
                value = self.value(j + 2)
                if value is not None:
                    found[toks[j].text[1:-1].replace("''", "'")] = value
        return found


def statement_access(text: Any, parameters: Any, schema_of: SchemaOf) -> Access:
    """What one PartiQL statement touches (module docstring); unreadable: everything."""
    tokens = _pql_tokens(text) if isinstance(text, str) else None
    if not tokens:
        return Access(EVERYTHING, None, None, True)
    if tokens[0].word == "EXISTS" and len(tokens) > 2 and tokens[1].text == "(":
        tokens = tokens[2:]
    stmt = _Statement(tokens, parameters if isinstance(parameters, list) else [])
    verb = tokens[0].word
    words = [t.word for t in tokens]
    if verb == "SELECT" and "FROM" in words:
        at, write = words.index("FROM") + 1, False
    elif verb == "DELETE" and len(words) > 1 and words[1] == "FROM":
        at, write = 2, True
    elif verb == "UPDATE":
        at, write = 1, True
    elif verb == "INSERT" and len(words) > 1 and words[1] == "INTO":
        at, write = 2, True
    else:
        return Access(EVERYTHING, None, None, True)
    table, indexed = stmt.table_after(at)
    if table is None:
        return Access(EVERYTHING, None, None, True)
    names = schema_of(table)
    if names is None or indexed:
        return Access(table, None, None, write)
    if verb == "INSERT":
        values: dict[str, KeyValue] | None = stmt.insert_value(at + 1)
    else:
        where = words.index("WHERE") if "WHERE" in words else None
        values = stmt.where_equalities(where + 1) if where is not None else None
    hash_name, range_name = names
    if not values or hash_name not in values or (range_name is not None and range_name not in values):
        return Access(table, None, None, write)
    return Access(table, values[hash_name], values[range_name] if range_name is not None else None, write)


def _statements(operation: str, params: Mapping[str, Any]) -> Iterator[tuple[Any, Any]]:
    if operation == Op.EXECUTE_STATEMENT:
        yield params.get("Statement"), params.get("Parameters")
        return
    entries = params.get("Statements") if operation == Op.BATCH_EXECUTE_STATEMENT else params.get("TransactStatements")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping):
            yield entry.get("Statement"), entry.get("Parameters")
        else:
            yield None, None


# ---------------------------------------------------------------- one call


def accesses(operation: str, params: Mapping[str, Any], schema_of: SchemaOf) -> frozenset[Access]:
    """Every item, partition or table one call touches, read or written (module docstring)."""
    found = CATALOGUE.get(operation)
    if found is None or found.scope in ("control", "stream", "labkit"):
        return frozenset({Access(EVERYTHING, None, None, True)})
    out: set[Access] = set()
    if found.scope in ("item", "batch", "transaction"):
        for table, attrs, write in item_keys(operation, params):
            out.add(_item(table, attrs, write, schema_of))
        token = params.get("ClientRequestToken")
        if found.writes and isinstance(token, str):
            out.add(Access(TOKENS, ("S", token), None, True))
    elif found.scope == "table":
        name = params.get("TableName")
        access = _query(params, schema_of) if operation == Op.QUERY else None
        if access is None and isinstance(name, str):
            access = Access(name, None, None, False)
        if access is not None:
            out.add(access)
    elif found.scope == "statement":
        for text, parameters in _statements(operation, params):
            out.add(statement_access(text, parameters, schema_of))
        token = params.get("ClientRequestToken")
        if isinstance(token, str):
            out.add(Access(TOKENS, ("S", token), None, True))
    if not out:  # a request naming nothing readable: everything, to be safe
        out.add(Access(EVERYTHING, None, None, True))
    return frozenset(out)


__all__ = [
    "EVERYTHING",
    "TOKENS",
    "Access",
    "KeyNames",
    "KeySchemas",
    "KeyValue",
    "accesses",
    "canonical",
    "conflict",
    "item_access",
    "statement_access",
]
