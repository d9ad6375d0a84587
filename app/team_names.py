"""Team names as a reader confuses them: the key two names share when they look alike.

A team name is shown next to scores, so a name that looks like another team's (or like an anonymous entry)
lets one team pass for another. The key folds what a reader cannot tell apart: compatibility forms (NFKC:
full-width letters, ligatures, non-breaking spaces), invisible characters (zero-width spaces and joiners,
bidi controls, soft hyphens, variation selectors), case, runs of spaces, and Cyrillic, Greek and Armenian
letters drawn like Latin ones (a small map of the common look-alikes from Unicode's confusables list,
rather than a dependency: only letters people actually swap in names are needed).
"""

from __future__ import annotations

import re
import unicodedata

RESERVED = ("Anonymous",)  # how anonymous entries are shown on boards

# Capitals first (before case folding they map to Latin capitals: Cyrillic "Н" is "H", not "n").
_UPPER = str.maketrans(
    {
        # Cyrillic
        "А": "A",
        "В": "B",
        "Е": "E",
        "Ё": "E",
        "З": "3",
        "Ѕ": "S",
        "І": "I",
        "Ї": "I",
        "Ј": "J",
        "К": "K",
        "М": "M",
        "Н": "H",
        "О": "O",
        "Р": "P",
        "С": "C",
        "Т": "T",
        "У": "Y",
        "Х": "X",
        "Ү": "Y",
        "Һ": "H",
        "Ԛ": "Q",
        "Ԝ": "W",
        "Ӏ": "l",
        "Ь": "b",
        # Greek
        "Α": "A",
        "Β": "B",
        "Ε": "E",
        "Ζ": "Z",
        "Η": "H",
        "Ι": "I",
        "Κ": "K",
        "Μ": "M",
        "Ν": "N",
        "Ο": "O",
        "Ρ": "P",
        "Τ": "T",
        "Υ": "Y",
        "Χ": "X",
    }
)
# Then small letters, after case folding.
_LOWER = str.maketrans(
    {
        # Cyrillic
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "г": "r",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "п": "n",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "ѕ": "s",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "һ": "h",
        "ӏ": "l",
        "ү": "y",
        "ь": "b",
        "ɑ": "a",
        "ɡ": "g",
        "ı": "i",
        # Greek
        "α": "a",
        "β": "b",
        "γ": "y",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "μ": "u",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ϲ": "c",
        "ϳ": "j",
        # Armenian
        "օ": "o",
        "ս": "u",
        "ց": "g",
        "հ": "h",
        "ո": "n",
        "զ": "q",
    }
)
# Drawn as nothing: format characters (category Cf: zero-width space/joiners, bidi controls, soft hyphen,
# word joiner, BOM) and these marks and fillers.
_INVISIBLE = {"\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"}
_SPACES = re.compile(r"\s+")


def _visible(text: str) -> str:
    return "".join(
        ch
        for ch in text
        if unicodedata.category(ch) != "Cf"
        and ch not in _INVISIBLE
        and not 0xFE00 <= ord(ch) <= 0xFE0F
        and not 0xE0100 <= ord(ch) <= 0xE01EF
    )


def name_key(name: str) -> str:
    """The key of a team name: equal for names a reader would take for one another."""
    text = _visible(unicodedata.normalize("NFKC", name or ""))
    text = text.translate(_UPPER).casefold().translate(_LOWER)
    text = _visible(unicodedata.normalize("NFKC", text))
    return _SPACES.sub(" ", text).strip()


RESERVED_KEYS = frozenset(name_key(name) for name in RESERVED)


def display_name(name: str) -> str:
    """The name as stored and shown: typed text without invisible characters, spaces collapsed."""
    return _SPACES.sub(" ", _visible(name or "")).strip()
