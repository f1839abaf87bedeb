"""Look-alike unique values are refused, naming the field and the character; folds still fold."""

from __future__ import annotations

import pytest

from labkit.patterns import uniqueness as u
from labkit.shared.backend import Connection
from labkit.shared.errors import (
    LookAlikeValue,
    ValidationError,
)
from tests.patterns.signups import ADA

LOOK_ALIKES = {
    "zero width space": ("email", "ada\u200b@x.io", "\u200b", "U+200B ZERO WIDTH SPACE"),
    "zero width joiner": ("email", "a\u200dda@x.io", "\u200d", "U+200D ZERO WIDTH JOINER"),
    "soft hyphen": ("email", "a\u00adda@x.io", "\u00ad", "U+00AD SOFT HYPHEN"),
    "NUL": ("email", "a\x00da@x.io", "\x00", "U+0000 NULL"),
    "BEL": ("email", "ada\x07@x.io", "\x07", "U+0007 BELL"),
    "newline": ("username", "a\nb", "\n", "U+000A LINE FEED"),
    "bidi override": ("username", "ada\u202e", "\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    "only invisible": ("username", "\u200b", "\u200b", "U+200B ZERO WIDTH SPACE"),
    "cyrillic a": ("email", "\u0430da@x.io", "\u0430", "U+0430 CYRILLIC SMALL LETTER A"),
    "greek omicron": ("email", "ad\u03bf@x.io", "\u03bf", "U+03BF GREEK SMALL LETTER OMICRON"),
    "cyrillic in username": ("username", "p\u0430ypal", "\u0430", "U+0430 CYRILLIC SMALL LETTER A"),
}


@pytest.mark.parametrize("case", sorted(LOOK_ALIKES))
def test_normalise_value__look_alike__refused_naming_field_and_character(case: str) -> None:
    """Each look-alike: LookAlikeValue with the field, the character and its Unicode name in the message."""
    field, raw, char, named = LOOK_ALIKES[case]
    namespace = u.DEFAULT_FIELDS[field]
    with pytest.raises(LookAlikeValue) as info:
        u.normalise_value(field, raw, namespace)
    assert (info.value.field, info.value.char) == (field, char)
    assert str(info.value).startswith(field) and named in str(info.value)


@pytest.mark.parametrize("domain", ["x..io", "-x.io", "x-.io", ".x.io"])
def test_normalise_email__bad_domain_label__refused(domain: str) -> None:
    """Empty labels and labels that start or end with '-' are not a domain."""
    with pytest.raises(ValidationError, match="domain"):
        u.normalise_email(f"ada@{domain}")


@pytest.mark.parametrize(
    ("raw", "folded"),
    [
        ("ＡＤＡ＠Lovelace.IO", "ada@lovelace.io"),
        ("\u00a0Ada@Lovelace.io\u00a0", "ada@lovelace.io"),
        ("ade\u0301@x.io", "ad\u00e9@x.io"),
        ("мария@почта.рф", "мария@почта.рф"),
        ("αλφα@x.io", "αλφα@x.io"),
    ],
)
def test_normalise_email__foldable_or_single_script__accepted(raw: str, folded: str) -> None:
    """Fullwidth, case, NBSP around, decomposed accents fold; one non-Latin script per label is fine."""
    assert u.normalise_email(raw) == folded


def test_register__look_alike_email__nothing_written(tconn: Connection) -> None:
    """The refusal comes before any call: the table stays empty."""
    with pytest.raises(LookAlikeValue):
        u.register(tconn.client, tconn.table_name, email="ada\u200b@lovelace.io", username="ada")
    assert u.table_items(tconn.client, tconn.table_name).empty


def test_normalise_email__case_and_spaces__give_one_key() -> None:
    """Ada@Lovelace.io and ' ada@lovelace.io ' are the same address, so the same marker key."""
    assert u.normalise_email(" Ada@Lovelace.IO ") == u.normalise_email(ADA) == ADA


def test_normalise_username__fullwidth_and_case__fold_to_ascii() -> None:
    """NFKC folds fullwidth letters; case-folding folds case: 'ＡＤＡ' is 'ada'."""
    assert u.normalise_username(" ＡＤＡ ") == "ada"
