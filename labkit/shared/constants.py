"""DynamoDB's documented numbers, in one place.

Every module that needs a limit or a unit size imports it from here, so a
lesson that quotes "4 KB per read unit" and the code that computes it cannot
drift apart.
"""

from __future__ import annotations

from typing import Final

#: Largest item DynamoDB stores, attribute names included (400 KB).
MAX_ITEM_BYTES: Final = 400 * 1024
#: Most significant digits in a DynamoDB number, and the magnitudes it can hold (besides 0).
MAX_NUMBER_DIGITS: Final = 38
SMALLEST_NUMBER: Final = "1E-130"
LARGEST_NUMBER: Final = "9.9999999999999999999999999999999999999E+125"
#: One read unit covers up to 4 KB read strongly consistent (half a unit eventually consistent).
READ_UNIT_BYTES: Final = 4 * 1024
#: One write unit covers up to 1 KB written.
WRITE_UNIT_BYTES: Final = 1024
#: Most actions in one TransactWriteItems / TransactGetItems.
MAX_TRANSACT_ITEMS: Final = 100
#: Most table names one ListTables page returns.
MAX_LIST_TABLES_PAGE: Final = 100
#: Most requests in one BatchWriteItem.
MAX_BATCH_WRITE_ITEMS: Final = 25
#: Attempts a labkit client makes per call: 1 call + 2 retries (botocore's ``standard`` retry mode's own
#: default; ``total_max_attempts`` counts the first call, botocore's older ``max_attempts`` does not).
SDK_ATTEMPTS: Final = 3
#: The engine's clock modes (``Labkit.SetClock``): real time (the default), or frozen: it moves
#: only when ``Labkit.AdvanceClock`` moves it (decision 140).
CLOCK_REAL: Final = "real"
CLOCK_FROZEN: Final = "frozen"
CLOCK_MODES: Final = (CLOCK_REAL, CLOCK_FROZEN)
#: The answer header naming the replication deliveries a request made (global tables: ``"7,8"``, their ids).
REPLICATIONS_HEADER: Final = "X-Labkit-Replications"
#: The content type of DynamoDB's JSON protocol, requests and answers alike.
JSON_CONTENT_TYPE: Final = "application/x-amz-json-1.0"
#: How long DynamoDB remembers a ClientRequestToken.
CLIENT_REQUEST_TOKEN_TTL_SECONDS: Final = 600
#: Longest ClientRequestToken DynamoDB accepts.
MAX_CLIENT_REQUEST_TOKEN_LENGTH: Final = 36
#: Largest partition key value in bytes (UTF-8), and sort key value.
MAX_PARTITION_KEY_BYTES: Final = 2048
MAX_SORT_KEY_BYTES: Final = 1024

#: Per-partition throughput DynamoDB documents, in read and write units per second
#: (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html),
#: and how many seconds of unused provisioned capacity it keeps for bursts (best effort; bursts
#: cannot lift the per-partition limits).
PARTITION_READ_UNITS_PER_SECOND: Final = 3000
PARTITION_WRITE_UNITS_PER_SECOND: Final = 1000
BURST_SECONDS: Final = 300
#: Sharded counter keys: shard i of counter <name> is PK="COUNTER#<name>#<i>", SK="SHARD", with the
#: count in attribute "n". One partition key per shard: the writes spread over N partitions.
COUNTER_PREFIX: Final = "COUNTER#"
COUNTER_SK: Final = "SHARD"

#: The lab table the notebooks use unless told otherwise.
DEFAULT_TABLE_NAME: Final = "labkit-lab"
#: Every table labkit creates carries this prefix; on real AWS labkit touches no other table.
TABLE_PREFIX: Final = "labkit-"
#: The GSI on the `email` attribute used by the uniqueness lesson.
EMAIL_INDEX_NAME: Final = "email-index"

#: Singleton lesson keys: the settings item is PK="SETTINGS#APP", SK="FLAGS#V1";
#: a migration writes the new shape at SK="FLAGS#V2" and readers switch by configuration.
SETTINGS_PK: Final = "SETTINGS#APP"
FLAGS_SK_V1: Final = "FLAGS#V1"
FLAGS_SK_V2: Final = "FLAGS#V2"

#: Uniqueness lesson keys: an account is PK="ACCT#<id>", SK="PROFILE";
#: a marker is PK="UNIQ#<namespace>#<normalised value>", SK="LOCK", owner=<id>.
ACCOUNT_PREFIX, ACCOUNT_SK = "ACCT#", "PROFILE"
MARKER_PREFIX, MARKER_SK = "UNIQ#", "LOCK"
#: Marker namespaces for the two unique fields the lesson protects by default.
EMAIL_NAMESPACE, HANDLE_NAMESPACE = "EMAIL", "HANDLE"
#: Longest email address that can be delivered (RFC 5321 path limit, minus the angle brackets).
MAX_EMAIL_LENGTH: Final = 254

#: Region and dummy credentials used for the embedded endpoint and DynamoDB Local.
LOCAL_REGION: Final = "us-east-1"
LOCAL_ACCESS_KEY: Final = "labkit"
LOCAL_SECRET_KEY: Final = "labkit"

#: Where docker compose publishes DynamoDB Local.
DYNAMODB_LOCAL_URL: Final = "http://localhost:8000"

# --- The embedded endpoint's engine (labkit/endpoint/) --------------------------------------------
#: Most keys in one BatchGetItem, across all its tables.
MAX_BATCH_GET_KEYS: Final = 100
#: Largest TransactWriteItems request DynamoDB accepts (4 MB).
MAX_TRANSACT_REQUEST_BYTES: Final = 4 * 1024 * 1024
#: Deepest nesting of lists and maps in an attribute value.
MAX_DOCUMENT_DEPTH: Final = 32
#: Most ClientRequestTokens the embedded endpoint remembers at once (the oldest are forgotten first).
MAX_REMEMBERED_TOKENS: Final = 20_000
#: Largest request body the embedded endpoint reads (DynamoDB's largest requests are 16 MB batches).
MAX_REQUEST_BODY_BYTES: Final = 16 * 1024 * 1024
#: Seconds the embedded endpoint waits for the rest of a half-sent body, and keeps an idle connection.
REQUEST_BODY_TIMEOUT_SECONDS: Final = 30.0
IDLE_KEEP_ALIVE_SECONDS: Final = 30.0

# --- DynamoDB's answers, word for word -----------------------------------------------------------
#: ``__type`` prefix of a DynamoDB error (``com.amazonaws.dynamodb.v20120810#ThrottlingException``).
ERROR_PREFIX: Final = "com.amazonaws.dynamodb.v20120810#"
#: DynamoDB's message for a request throttled on a provisioned table (ProvisionedThroughputExceededException).
PROVISIONED_THROUGHPUT_EXCEEDED_MESSAGE: Final = (
    "The level of configured provisioned throughput for the table was exceeded. "
    "Consider increasing your provisioning level with the UpdateTable API."
)
#: DynamoDB's message for a request throttled on an on-demand table (ThrottlingException, hot key).
ON_DEMAND_THROTTLED_MESSAGE: Final = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically "
    "scaling your table or index so please try again shortly. If exceptions persist, check if you "
    "have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
    "bp-partition-key-design.html"
)
