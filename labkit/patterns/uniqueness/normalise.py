"""Normalising unique values: one spelling per value, look-alikes refused (before any call).

Policy (docs/decisions.md, "Look-alike unique values"): a value is trimmed, NFKC-normalised
and case-folded, so fullwidth letters, upper case, NBSP and decomposed accents fold to one
spelling. What cannot be folded is refused with :class:`~labkit.shared.errors.LookAlikeValue`
naming the field and the character: control characters (NUL, BEL, newline...), invisible
format characters (zero-width space/joiner, soft hyphen, bidi controls, BOM...) and other
blank look-alikes (Hangul filler, Braille blank), and any label that mixes Latin with
Cyrillic or Greek letters (``pаypal`` with a Cyrillic ``а``). Email domains must be dot-separated
labels, none empty and none starting or ending with ``-``.
"""

from __future__ import annotations

import re
import unicodedata

from ...shared import constants as C
from ...shared.errors import LookAlikeValue, ValidationError
from .keys import check_key_length

#: Unicode categories refused anywhere in a unique value: control, format (invisible),
#: surrogate, private use, unassigned.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
#: Letters that render as blank although their category is "letter" or "symbol".
BLANK_LOOKALIKES = frozenset({"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"})
#: Scripts that share look-alike letters; one label may use only one of them.
CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


#: Names of control characters (unicodedata has none for them).
CONTROL_NAMES = {
    0: "NULL",
    7: "BELL",
    8: "BACKSPACE",
    9: "CHARACTER TABULATION",
    10: "LINE FEED",
    13: "CARRIAGE RETURN",
}


def _char_name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, CONTROL_NAMES.get(ord(ch), 'CONTROL CHARACTER'))}"


def check_characters(field_name: str, value: str) -> None:
    """Refuse control and invisible characters, and labels mixing Latin with Cyrillic or Greek."""
    for i, ch in enumerate(value):
        if unicodedata.category(ch) in REFUSED_CATEGORIES or ch in BLANK_LOOKALIKES:
            raise LookAlikeValue(
                f"{field_name} contains {_char_name(ch)} at position {i}: control and invisible characters "
                "are not allowed (they make values that look the same but are different); nothing was written. "
                "Remove it.",
                field_name,
                ch,
                i,
            )
    for match in re.finditer(r"[^\W\d_]+", value):
        scripts: dict[str, list[int]] = {}
        for j, ch in enumerate(match.group()):
            script = unicodedata.name(ch, "").split(" ")[0]
            if script in CONFUSABLE_SCRIPTS:
                scripts.setdefault(script, []).append(match.start() + j)
        if len(scripts) > 1:
            (main, _), (odd, where) = sorted(scripts.items(), key=lambda kv: -len(kv[1]))[:2]
            ch = value[where[0]]
            raise LookAlikeValue(
                f"{field_name} mixes {main.title()} and {odd.title()} letters in {match.group()!r}: "
                f"{_char_name(ch)} at position {where[0]} looks like a {main.title()} letter; nothing was "
                "written. Use one script per word.",
                field_name,
                ch,
                where[0],
            )


def normalise(raw: str, field_name: str = "value") -> str:
    """Trim, NFKC-normalise and case-fold: ``" Ada@Lovelace.io "`` -> ``"ada@lovelace.io"``.

    Refuses look-alikes (see the module docstring) with :class:`~labkit.shared.errors.LookAlikeValue`.
    """
    if not isinstance(raw, str):
        raise ValidationError(f"expected a string, got {type(raw).__name__}; nothing was written")
    check_characters(field_name, raw.strip())
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", raw.strip()).casefold())
    check_characters(field_name, folded)
    return folded.strip()


def normalise_email(raw: str) -> str:
    """Normalise an email; check: one @, a local part, a domain with an inner dot, no spaces."""
    value = normalise(raw, "email")
    hint = "nothing was written. Enter an address like ada@lovelace.io."
    if not value:
        raise ValidationError(f"email is empty; {hint}")
    if any(ch.isspace() for ch in value):
        raise ValidationError(f"email {raw!r} contains whitespace; {hint}")
    if value.count("@") != 1:
        raise ValidationError(f"email {raw!r} must contain exactly one '@'; {hint}")
    local, domain = value.split("@")
    if not local:
        raise ValidationError(f"email {raw!r} has nothing before the '@'; {hint}")
    if "." not in domain[1:-1]:
        raise ValidationError(f"email {raw!r} needs a domain with a dot, like lovelace.io; {hint}")
    for label in domain.split("."):
        if not label or label.startswith("-") or label.endswith("-"):
            raise ValidationError(
                f"email {raw!r} has a bad domain label {label!r}: labels are not empty and do not "
                f"start or end with '-'; {hint}"
            )
    if len(value) > C.MAX_EMAIL_LENGTH:
        raise ValidationError(
            f"email is {len(value)} characters, over the {C.MAX_EMAIL_LENGTH} an address may have; " + hint
        )
    return value


def normalise_username(raw: str) -> str:
    """Normalise a username (trim, NFKC, case-fold) and check it is not empty."""
    return normalise_value("username", raw, C.HANDLE_NAMESPACE)


def normalise_value(field_name: str, raw: str, namespace: str) -> str:
    """Normalise one unique value and check that its marker key fits DynamoDB's limit."""
    value = normalise_email(raw) if field_name == "email" else normalise(raw, field_name)
    if not value:
        raise ValidationError(f"{field_name} is empty; nothing was written. Choose a value such as 'ada'.")
    check_key_length(field_name, namespace, value)
    return value


__all__ = ["check_characters", "normalise", "normalise_email", "normalise_username", "normalise_value"]
