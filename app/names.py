"""Names and shown text: what a reader cannot see, and names a reader would take for one another.

Everything a team or a maintainer writes for others to read (team and model names, descriptions, paper and
code links, emails and token names, benchmark and split titles, reasons and notes) passes `invisible`: a
default-ignorable code point (drawn as nothing: zero-width spaces and joiners, soft hyphens, variation
selectors, Hangul fillers, Khmer inherent vowels, tags) or a bidi control (it reorders the text around it:
"photo" U+202E "gpj.exe" reads "photoexe.jpg") is refused, naming the character. Nothing is removed silently:
what is stored is what was typed, and what is shown is what was stored.

Names are compared by `name_key`, equal for names a reader would take for one another: compatibility forms
are folded (NFKC: full-width letters, ligatures, no-break spaces), then letters drawn alike, by the confusable
skeleton of Unicode's security mechanisms (UTS #39), and case; runs of spaces count as one. The look-alike
table is Unicode's confusables.txt, as the pinned package confusable_homoglyphs ships it (not a list kept
here). A table can miss letters (Coptic "ⲁ" is drawn like Latin "a" and is not in it), so `mixed_scripts`
also names a word whose letters come from several scripts (UTS #39's "highly restrictive" level, word by word).
"""

from __future__ import annotations

import bisect
import functools
import json
import re
import unicodedata

RESERVED = ("Anonymous",)  # how anonymous entries are shown on boards

# --- invisible characters ---------------------------------------------------------------------------------

# Default_Ignorable_Code_Point, by its rule in DerivedCoreProperties.txt: Other_Default_Ignorable_Code_Point
# + general category Cf + Variation_Selector - White_Space - FFF9..FFFB (interlinear annotation) - 13430..1343F
# (Egyptian hieroglyph format controls) - Prepended_Concatenation_Mark. The category comes from unicodedata;
# the three short lists are PropList.txt's (Unicode 14-15). The bidi controls (Bidi_Control: U+061C,
# U+200E/200F, U+202A-202E, U+2066-2069) are all Cf, so all default-ignorable.
_OTHER_DEFAULT_IGNORABLE = (
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x115F, 0x1160),  # HANGUL CHOSEONG/JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ, AA
    (0x2065, 0x2065),  # reserved among the invisible operators
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # reserved specials
    (0xE0000, 0xE0000),
    (0xE0002, 0xE001F),
    (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
)
_VARIATION_SELECTORS = ((0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
_VISIBLE_FORMAT = (  # format characters (Cf) that are drawn, so not default-ignorable
    (0x0600, 0x0605),  # Prepended_Concatenation_Mark ...
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0xFFF9, 0xFFFB),  # interlinear annotation
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
)
_IGNORABLE_RANGES = _OTHER_DEFAULT_IGNORABLE + _VARIATION_SELECTORS
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Refused too, though emoji need them: an emoji sequence joined (U+200D) or styled (U+FE0F) by one.
_EMOJI_GLUE = {"\u200d", "\ufe0f"}


def _in(ranges: tuple[tuple[int, int], ...], point: int) -> bool:
    return any(low <= point <= high for low, high in ranges)


# The listed ranges, as one character class; the rest (category Cf) are not printable (str.isprintable).
_LISTED = re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _IGNORABLE_RANGES) + "]")


def is_default_ignorable(char: str) -> bool:
    """Whether the character is Default_Ignorable_Code_Point: drawn as nothing where it is not understood."""
    if _LISTED.match(char):
        return True
    return unicodedata.category(char) == "Cf" and not char.isspace() and not _in(_VISIBLE_FORMAT, ord(char))


# Line breaks and tabs: the controls multi-line text keeps.
_KEPT_CONTROLS = frozenset("\t\n\r")


def _unshowable(char: str) -> bool:
    """A C0 or C1 control (but a tab or line break), DEL, or a lone surrogate: text a page, a mail subject or a
    terminal cannot show as it is (ESC starts a terminal's escape sequence; a lone surrogate is no character and
    cannot even be stored as UTF-8)."""
    return char not in _KEPT_CONTROLS and unicodedata.category(char) in ("Cc", "Cs")


def first_ignorable(text: str) -> str | None:
    """The first default-ignorable or unshowable character of the text (_unshowable), if any (fast for text
    without any)."""
    found = _LISTED.search(text)
    end = found.start() if found else len(text)
    if not text[:end].isprintable():
        for char in text[:end]:
            if not char.isprintable() and (is_default_ignorable(char) or _unshowable(char)):
                return char
    return found.group() if found else None


def describe(char: str) -> str:
    """'U+202E RIGHT-TO-LEFT OVERRIDE': the code point and its name (or that it has none)."""
    name = unicodedata.name(char, "") or ("(a reserved code point)" if unicodedata.category(char) == "Cn" else "")
    return f"U+{ord(char):04X} {name}".rstrip()


def invisible(text: str) -> str | None:
    """Why the text cannot be shown as it is, naming its first invisible character (default-ignorable or a
    bidi control), e.g. "contains U+202E RIGHT-TO-LEFT OVERRIDE, an invisible control character; remove it";
    None when it has none. Control characters (C0, C1, DEL) and lone surrogates are refused alike (issue 35).
    Line breaks and tabs are not invisible: multi-line text keeps them."""
    char = first_ignorable(text)  # the bidi controls are among them
    if char is None:
        return None
    if unicodedata.category(char) == "Cs":
        return f"contains {describe(char)}, a lone surrogate (half of a character, not one); remove it"
    if unicodedata.category(char) == "Cc":
        return f"contains {describe(char)}, a control character; remove it"
    emoji = " (emoji sequences that use it are refused too)" if char in _EMOJI_GLUE else ""
    return f"contains {describe(char)}, an invisible control character; remove it{emoji}"


# --- look-alike names -------------------------------------------------------------------------------------

_KEY_ROUNDS = 8  # a key is folded again until it no longer changes (two rounds for every character alone)
_SPACES = re.compile(r"[\s\u2800]+")  # white space, and the blank Braille pattern drawn like one


@functools.cache
def _skeleton_table() -> dict[int, str]:
    """code point -> its prototype in UTS #39's confusables.txt (the character or characters it is drawn
    like), for str.translate; built once, on first use (about 0.1 s).

    confusable_homoglyphs stores the file symmetrically: each line "source ; prototype" puts the prototype in
    the source's list and the source in the prototype's (some keys carry U+200E marks from the file's comments,
    removed here). In the file each source has one prototype, and prototypes are never sources. So a character
    whose list holds a string of several characters maps to it ("m" -> "rn"); one with several entries is a
    prototype; one with a single entry maps to it when that entry has several of its own (it is then the
    prototype), and otherwise, a pair only alike to each other, both map to the smaller: equal skeletons are all
    that matter, not which member of a class stands for it. Prototypes made of mapped characters are mapped in
    turn, so every skeleton is made of prototypes."""
    from importlib import resources  # 20 ms of imports a process without names never needs

    source = resources.files("confusable_homoglyphs").joinpath("confusables.json")
    alike: dict[str, set[str]] = {}
    for key, entries in json.loads(source.read_text("utf-8")).items():
        alike.setdefault(key.replace("\u200e", ""), set()).update(e["c"].replace("\u200e", "") for e in entries)
    table: dict[int, str] = {}
    for char, others in alike.items():
        if len(char) != 1:
            continue
        longer = sorted(other for other in others if len(other) > 1)
        if longer:
            target = longer[0]
        elif len(others) > 1:
            continue
        else:
            (other,) = others
            target = other if len(alike.get(other, ())) > 1 else min(char, other)
        if target != char:
            table[ord(char)] = target
    for _ in range(_KEY_ROUNDS):
        closed = {point: _nfd(_nfd(target).translate(table)) for point, target in table.items()}
        if closed == table:
            break
        table = closed
    return table


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def skeleton(text: str) -> str:
    """UTS #39's skeleton: NFD, each character replaced by its prototype, NFD again."""
    return _nfd(_nfd(text).translate(_skeleton_table()))


def _fold(text: str) -> str:
    """One round of the key: NFKC, without invisible characters, skeleton, upper case, skeleton, case folded,
    skeleton, spaces collapsed. Upper case first, then folded: a capital drawn like another small letter ("I"
    like "l") keys like its own small letter too, so Latin names differ in more than case and look-alike
    letters. Looks come first: a letter whose capital and small forms are drawn like two different letters
    (Greek "Η" like "H", "η" like "n") keys by its looks, so there case alone can make names differ."""
    text = unicodedata.normalize("NFKC", text)
    if first_ignorable(text) is not None:  # only in names stored before they were refused
        text = "".join(char for char in text if not is_default_ignorable(char))
    text = skeleton(skeleton(skeleton(text).upper()).casefold())
    return _SPACES.sub(" ", text).strip()


@functools.lru_cache(maxsize=8192)  # a board's model names, keyed again at every version of the board
def name_key(name: str) -> str:
    """The key of a name: equal for names a reader would take for one another (and for names differing in
    case, invisible characters or runs of spaces). Not for showing: it mixes scripts ("Anonymous" ->
    "anonyrnous")."""
    key = name or ""
    for _ in range(_KEY_ROUNDS):
        folded = _fold(key)
        if folded == key:
            break
        key = folded
    return unicodedata.normalize("NFC", key)


@functools.cache
def reserved_keys() -> frozenset[str]:
    return frozenset(name_key(name) for name in RESERVED)


def display_name(name: str) -> str:
    """The name as stored and shown: as typed, runs of spaces collapsed and the ends trimmed."""
    return _SPACES.sub(" ", name or "").strip()


# --- scripts ----------------------------------------------------------------------------------------------

_NO_SCRIPT = frozenset({"COMMON", "INHERITED", "Unknown"})  # digits, punctuation, marks: any script's
# Scripts written together, beside Latin (UTS #39 5.2: Japanese, Chinese with Bopomofo, Korean).
_WRITTEN_TOGETHER = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)


@functools.cache
def _script_ranges() -> tuple[list[int], list[tuple[int, str]]]:
    """Scripts.txt as confusable_homoglyphs ships it: range starts, and each range's end and script."""
    from importlib import resources

    data = json.loads(resources.files("confusable_homoglyphs").joinpath("categories.json").read_text("utf-8"))
    ranges = sorted(data["code_points_ranges"])
    names = data["iso_15924_aliases"]
    return [start for start, *_ in ranges], [(end, names[script]) for _, end, script, _ in ranges]


def script(char: str) -> str:
    """The script of a character, as Scripts.txt names it ('LATIN', 'COPTIC', 'COMMON', ...)."""
    starts, rest = _script_ranges()
    index = bisect.bisect_right(starts, ord(char)) - 1
    if index >= 0 and ord(char) <= rest[index][0]:
        return rest[index][1]
    return "Unknown"


def mixed_scripts(text: str) -> str | None:
    """Why a name mixes scripts within a word (letters of one script drawn like another's), e.g.
    "mixes Coptic and Latin letters in one word ('ⲁnonymous') ..."; None when each word is of one script (or
    of scripts written together: Latin with Han and kana, Bopomofo or Hangul)."""
    for word in unicodedata.normalize("NFKC", text).split():
        scripts = {script(char) for char in word} - _NO_SCRIPT
        if len(scripts) > 1 and not any(scripts <= together for together in _WRITTEN_TOGETHER):
            named = sorted(name.replace("_", " ").title() for name in scripts)
            listed = ", ".join(named[:-1]) + " and " + named[-1]
            return (
                f"mixes {listed} letters in one word ({word!r}): letters of one script drawn like another's "
                "let one name pass for another; write each word in one script"
            )
    return None


# --- addresses --------------------------------------------------------------------------------------------


def team_slug(name: str) -> str:
    """The public page's address of a team named `name`: its letters and digits folded to ASCII (NFKD, accents
    dropped), lower case, runs of anything else as one "-". Never empty and never all digits, so /teams/<slug>
    is not taken for a team id: "team" is added to a name with no ASCII letter. A name whose slug is taken
    gets "-2", "-3" ... (people/teams.py)."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")[:80].strip("-")
    if not re.search(r"[a-z]", slug):
        slug = f"team-{slug}" if slug else "team"
    return slug
