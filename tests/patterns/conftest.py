"""The lesson patterns' fixture: ``store``, a FlagStore on the test's table. The helpers the test files import
are modules beside this one: flags.py (singleton) and signups.py (uniqueness)."""

from __future__ import annotations

import pytest

from labkit.patterns.singleton import FlagStore
from labkit.shared.backend import Connection
from tests.patterns.flags import no_sleep


@pytest.fixture
def store(tconn: Connection) -> FlagStore:
    return FlagStore(tconn.client, tconn.table_name, sleep=no_sleep)
