"""Names and shown text (app/names.py): invisible characters are found and named, look-alike names share a key.

Properties (Hypothesis) for any text: the key is idempotent and blind to compatibility forms and spaces; a
default-ignorable character or bidi control anywhere is refused, naming the first. Tables: every character
the red team used is refused or collides with the name it imitates; real, distinct names never collide.
"""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import names
from app.names import describe, display_name, invisible, is_default_ignorable, mixed_scripts, name_key, skeleton

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Default_Ignorable_Code_Point as DerivedCoreProperties.txt lists it (Unicode 14.0 and 15.0): the reference the
# rule in app/names.py is checked against, for every code point.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
IGNORABLE = [chr(point) for low, high in DEFAULT_IGNORABLE for point in range(low, high + 1)]
BIDI_CONTROLS = (
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # Bidi_Control (PropList.txt)
)

# What the red team got through, beside what it imitates: each is refused or keys like its original.
RED_TEAM = [
    ("\u13aanonymous", "Anonymous"),  # Cherokee Ꭺ
    ("\ua4eenonymous", "Anonymous"),  # Lisu ꓮ
    ("\u0391nonymous", "Anonymous"),  # Greek Α
    ("\u0410nonymous", "Anonymous"),  # Cyrillic А
    ("\uff21\uff4e\uff4f\uff4e\uff59\uff4d\uff4f\uff55\uff53", "Anonymous"),  # full-width
    ("Anonyrnous", "Anonymous"),  # r n drawn as m
    ("ANONYMOUS", "anonymous"),
    ("\u2c81nonymous", "anonymous"),  # Coptic ⲁ: not in Unicode's table; the word mixes scripts
    ("Anony\u17b4mous", "Anonymous"),  # Khmer inherent vowels
    ("Anony\u17b5mous", "Anonymous"),
    ("Anonymous\u180b", "Anonymous"),  # Mongolian free variation selector
    ("\u202eAnonymous", "Anonymous"),  # right-to-left override
    ("PaypaI", "Paypal"),  # capital I drawn as small l
    ("Team 1", "Team l"),
    ("Team \u03bd", "Team v"),  # Greek nu
]

# Real names that differ: no two may share a key.
DISTINCT = [
    "Team A",
    "Team B",
    "TeamA",
    "Lab",
    "Rivals",
    "DeepMind",
    "OpenAI",
    "Meta AI",
    "Google Research",
    "Allen Institute for AI",
    "Cafe",
    "Cafés du Monde",
    "Zürich NLP",
    "Zurich NLP",  # an accent is a visible difference
    "München",
    "東京大学",
    "京都大学",
    "北京大学",
    "清华大学",
    "서울대학교",
    "Ελληνικά",
    "Αθήνα",
    "Москва",
    "Санкт-Петербург",
    "Tel Aviv עברית",
    "جامعة القاهرة",
    "हिन्दी",
    "Đại học Bách khoa",
    "ภาษาไทย",
    "Team 7",
    "Team 8",
    "Vision Lab",
    "Visual Lab",
]


def _insert(text: str, char: str, at: int) -> str:
    at = min(at, len(text))
    return text[:at] + char + text[at:]


# --- invisible characters ------------------------------------------------------------------------------------


def test_the_rule_finds_exactly_the_default_ignorable_code_points():
    """The rule (category Cf, PropList's short lists) against DerivedCoreProperties' list, code point by code
    point: all 1,114,112 of them."""
    expected = set(IGNORABLE)
    found = {chr(point) for point in range(0x110000) if is_default_ignorable(chr(point))}
    assert found - expected == set(), sorted(map(describe, found - expected))
    assert expected - found == set(), sorted(map(describe, expected - found))
    assert len(found) == 4174


def test_the_bidi_controls_are_among_them():
    assert set(BIDI_CONTROLS) == names.BIDI_CONTROLS and all(map(is_default_ignorable, BIDI_CONTROLS))


@pytest.mark.parametrize("char", [*BIDI_CONTROLS, "\u17b4", "\u17b5", "\u180b", "\u180f", "\u3164", "\U000e0041"])
def test_bidi_controls_and_the_red_teams_invisibles_are_refused_by_name(char):
    said = invisible(f"Team{char}A")
    assert said is not None and said.startswith(f"contains U+{ord(char):04X} {unicodedata.name(char)}, ")


def test_every_default_ignorable_code_point_is_refused_naming_it():
    for char in IGNORABLE:
        said = invisible(f"a{char}b")
        assert said == f"contains {describe(char)}, an invisible control character; remove it" + (
            " (emoji sequences that use it are refused too)" if char in "\u200d\ufe0f" else ""
        ), describe(char)


def test_the_message_names_the_character():
    assert (
        invisible("model\u202e") == "contains U+202E RIGHT-TO-LEFT OVERRIDE, an invisible control character; remove it"
    )
    assert invisible("x\u2065") == "contains U+2065 (a reserved code point), an invisible control character; remove it"
    assert "emoji" in invisible("\U0001f469\u200d\U0001f52c")  # woman scientist: a joined emoji is refused too


def test_visible_text_passes_line_breaks_and_tabs_included():
    for text in (
        "",
        "Line one.\n\tLine two.\r\n",
        "Ελληνικά 東京 עברית العربية",
        "a\u00a0b",
        "\U0001f469\U0001f52c",
        "—",
    ):
        assert invisible(text) is None, text


def _unshowable(char: str) -> bool:
    """A control (C0, C1, DEL; but a tab or line break) or a lone surrogate: refused too since issue 35."""
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cs")


def test_controls_and_lone_surrogates_are_refused_naming_them_but_line_breaks_and_tabs_stay():
    for char in ("\x00", "\x07", "\x1b", "\x7f", "\x85", "\x9b", "\ud800", "\udfff"):
        said = invisible(f"ok {char} ok")
        assert said is not None and said.startswith(f"contains {describe(char)}, "), (char, said)
    assert invisible("a\tb\nc\r\n") is None


@SETTINGS
@given(st.text(), st.sampled_from(IGNORABLE), st.integers(min_value=0, max_value=200))
def test_any_text_with_an_invisible_character_is_refused_naming_the_first(text, char, at):
    text = "".join(c for c in text if not is_default_ignorable(c) and not _unshowable(c))
    assert invisible(text) is None
    said = invisible(_insert(text, char, at))
    assert said is not None and said.startswith(f"contains {describe(char)}, ")


@SETTINGS
@given(st.text(), st.sampled_from(IGNORABLE), st.sampled_from(IGNORABLE))
def test_the_first_of_several_is_named(text, first, second):
    text = "".join(c for c in text if not is_default_ignorable(c) and not _unshowable(c))
    said = invisible(first + text + second)
    assert said is not None and said.startswith(f"contains {describe(first)}, ")


# --- look-alike names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, original", RED_TEAM)
def test_every_red_team_name_is_refused_or_collides(name, original):
    assert invisible(name) or mixed_scripts(name) or name_key(name) == name_key(original), name


def test_the_red_team_keys_collide_with_anonymous_and_each_other():
    copies = [name for name, original in RED_TEAM if original == "Anonymous" and invisible(name) is None]
    assert len(copies) == 6
    assert {name_key(name) for name in copies} == {name_key("Anonymous")} == names.reserved_keys()


def test_real_distinct_names_never_collide():
    keys = {}
    for name in DISTINCT:
        assert invisible(name) is None and mixed_scripts(name) is None, name
        keys.setdefault(name_key(name), []).append(name)
    assert [same for same in keys.values() if len(same) > 1] == []


@SETTINGS
@given(st.text())
def test_the_key_is_idempotent(name):
    key = name_key(name)
    assert name_key(key) == key


@SETTINGS
@given(st.text(), st.sampled_from(["NFC", "NFD", "NFKC", "NFKD"]))
def test_the_key_is_blind_to_normalisation(name, form):
    assert name_key(unicodedata.normalize(form, name)) == name_key(name)


@settings(SETTINGS, max_examples=100)
@given(st.lists(st.text(alphabet=st.characters(whitelist_categories=("L", "N", "P")), min_size=1), min_size=1))
def test_the_key_is_blind_to_runs_of_spaces(words):
    assert name_key("  " + " \t\u00a0 ".join(words) + " ") == name_key(" ".join(words))


LATIN = "".join(
    chr(p) for p in range(0x20, 0x17F) if unicodedata.category(chr(p)).startswith("L") and p not in (0xD0, 0xF0)
)


@SETTINGS
@given(st.text(alphabet=LATIN + " -_.0123456789"))
def test_latin_names_differing_in_case_share_a_key(name):
    assert name_key(name.upper()) == name_key(name.lower()) == name_key(name) == name_key(name.casefold())


@pytest.mark.parametrize("char", ["A", "a", "m", "I", "l", "Ꭺ", "ꓮ", "Α", "а", "ν", "0", "O"])
def test_skeletons_are_made_of_prototypes(char):
    assert skeleton(skeleton(char)) == skeleton(char)


def test_every_skeleton_is_a_fixed_point():
    table = names._skeleton_table()
    assert len(table) > 6000
    for point, prototype in table.items():
        assert skeleton(prototype) == prototype, (describe(chr(point)), prototype)


@pytest.mark.parametrize(
    "a, b",
    [("rn", "m"), ("Team Ꭺ", "Team A"), ("ＴＥＡＭ", "team"), ("Team\u00a0A", "Team A"), ("Straße", "STRASSE")],
)
def test_look_alikes_share_a_key(a, b):
    assert name_key(a) == name_key(b)


def test_display_name_collapses_spaces_only():
    assert display_name("  Team \t  A\u2800 ") == "Team A"
    assert display_name("Ꭺnonymous") == "Ꭺnonymous"


# --- scripts -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, said",
    [
        ("\u2c81nonymous", "mixes Coptic and Latin letters in one word ('ⲁnonymous')"),
        ("P\u0430yPal", "mixes Cyrillic and Latin letters"),
        ("Tеаm Αlpha", "mixes Cyrillic and Latin letters"),
        ("ΑBC", "mixes Greek and Latin letters"),
        ("Ꮪtar Ꭺlliance", "mixes Cherokee and Latin letters"),
    ],
)
def test_a_word_mixing_scripts_is_named(name, said):
    assert said in (mixed_scripts(name) or "")


@pytest.mark.parametrize(
    "name", ["AI研究所", "東京AIラボ", "ソニーAI", "서울AI연구소", "Team Ελληνικά", "β VAE team", "Lab 2.0", "R&D"]
)
def test_words_of_one_script_or_of_scripts_written_together_pass(name):
    assert mixed_scripts(name) is None


# --- cost ----------------------------------------------------------------------------------------------------


def test_keys_are_cheap_once_the_table_is_built():
    """The look-alike table is read and built once (about 0.1 s), never per name: 2,000 keys leave its cache's
    misses where they were. (What a key costs, ~35 µs, is for `make bench`, not a timed assertion.)"""
    names._skeleton_table()
    built = names._skeleton_table.cache_info().misses
    many = [f"Model {i}, fine-tuned ({i % 7} epochs)" for i in range(2000)]
    for name in many:
        name_key.__wrapped__(name)
    assert names._skeleton_table.cache_info().misses == built
    assert len(set(itertools.islice(map(name_key, many), 100))) == 100
