"""The tables a labkit test created on a lab backend, seen as they are made and dropped after the test."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from ..shared import constants as C
from ..shared.catalogue import Op
from .options import TABLE_PREFIX


class TableTracker:
    """Sees every CreateTable that reaches the lab; the tables a labkit test created are dropped after it."""

    def __init__(self, url: str) -> None:
        from ..shared.intercept import endpoint_key

        self.url = url
        self.key = endpoint_key(url)
        self.created: list[tuple[str, str]] | None = None  # (region, table) while a labkit test runs
        self.paused = 0  # inside a class/module/session-scoped fixture's setup
        self._clients: dict[str, Any] = {}

    def _ours(self, client: Any) -> bool:
        from ..shared.intercept import reached

        return reached(client) == self.key

    def before(self, client: Any, operation: str) -> None:
        return None

    def after(self, client: Any, operation: str, params: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        if operation != Op.CREATE_TABLE or self.created is None or self.paused or not self._ours(client):
            return
        name = str(params.get("TableName") or "")
        if name and not name.startswith(TABLE_PREFIX):  # labkit_conn deletes its own
            self.created.append((str(client.meta.region_name), name))

    def drop(self, tables: list[tuple[str, str]]) -> None:
        """DeleteTable for each; a table the test already deleted is fine."""
        from botocore.exceptions import BotoCoreError, ClientError

        from ..shared.backend import new_session

        for region, name in dict.fromkeys(tables):
            client = self._clients.get(region)
            if client is None:
                client = self._clients[region] = new_session().client(
                    "dynamodb",
                    endpoint_url=self.url,
                    region_name=region,
                    aws_access_key_id=C.LOCAL_ACCESS_KEY,
                    aws_secret_access_key=C.LOCAL_SECRET_KEY,
                )
            with contextlib.suppress(ClientError, BotoCoreError):
                client.delete_table(TableName=name)


__all__ = [
    "TableTracker",
]
