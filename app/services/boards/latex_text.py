"""Text for a LaTeX table that pdflatex sets with its standard fonts, and how wide it will be.

Names are written in ASCII, whatever the paper's input encoding: LaTeX's special characters are escaped,
accented Latin letters become accent commands (é -> \\'{e}, ǖ -> \\={\\"{u}}), a Greek letter or two a math
symbol ($\\alpha$-Net) and a Greek word a transliteration, Cyrillic a transliteration, typographic punctuation
its LaTeX form (– -> --), and what the standard fonts cannot set at all (CJK ideographs, emoji, other
scripts) a "?". A few letters need the T1 font encoding (ą, ð, þ, ŋ, đ, guillemets): `needs_t1` tells, and
the export then asks for \\usepackage[T1]{fontenc}.

Widths are estimates in ems of Computer Modern, the widest of the usual paper fonts, so that a table laid out
from them is no taller than estimated: they decide how many lines a name takes and how many rows a float holds.
A name is never cut, and a line breaks only at its spaces: a token ("lr=1e-5", "v3.1_final") is set whole, in
an \\mbox, never hyphenated nor broken after a hyphen; `wrap` counts the lines the same way.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "%": r"\%",
    "~": r"\textasciitilde{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}

# Combining marks LaTeX has an accent command for (the others are dropped: the letter stays).
_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0323": "d",
    "\u0327": "c",
    "\u0328": "k",
    "\u0331": "b",
}
_T1_ONLY = {"k"}  # \k (ogonek) is defined for T1 alone

# Letters and signs that do not decompose: (LaTeX, width in ems, needs T1).
_SYMBOLS: dict[str, tuple[str, float, bool]] = {
    "ß": (r"\ss{}", 0.5, False),
    "æ": (r"\ae{}", 0.72, False),
    "Æ": (r"\AE{}", 0.9, False),
    "œ": (r"\oe{}", 0.78, False),
    "Œ": (r"\OE{}", 1.01, False),
    "ø": (r"\o{}", 0.5, False),
    "Ø": (r"\O{}", 0.78, False),
    "ł": (r"\l{}", 0.28, False),
    "Ł": (r"\L{}", 0.63, False),
    "ı": (r"\i{}", 0.28, False),
    "ȷ": (r"\j{}", 0.31, False),
    "đ": (r"\dj{}", 0.56, True),
    "Đ": (r"\DJ{}", 0.77, True),
    "ð": (r"\dh{}", 0.5, True),
    "Ð": (r"\DH{}", 0.77, True),
    "þ": (r"\th{}", 0.56, True),
    "Þ": (r"\TH{}", 0.68, True),
    "ŋ": (r"\ng{}", 0.56, True),
    "Ŋ": (r"\NG{}", 0.77, True),
    "ħ": ("h", 0.56, False),
    "ſ": ("s", 0.4, False),
    "«": (r"\guillemotleft{}", 0.56, True),
    "»": (r"\guillemotright{}", 0.56, True),
    "‹": (r"\guilsinglleft{}", 0.33, True),
    "›": (r"\guilsinglright{}", 0.33, True),
    "–": ("--", 0.5, False),
    "—": ("---", 1.0, False),
    "‐": ("-", 0.33, False),
    "‑": ("-", 0.33, False),
    "−": ("-", 0.33, False),
    "‘": ("`", 0.28, False),
    "’": ("'", 0.28, False),
    "‚": (",", 0.28, False),
    "“": ("``", 0.5, False),
    "”": ("''", 0.5, False),
    "„": (",,", 0.5, False),
    "…": (r"\ldots{}", 0.9, False),
    "•": (r"\textbullet{}", 0.5, False),
    "·": (r"\textperiodcentered{}", 0.28, False),
    "°": (r"\textdegree{}", 0.4, False),
    "×": (r"$\times$", 0.78, False),
    "÷": (r"$\div$", 0.78, False),
    "±": (r"$\pm$", 0.78, False),
    "→": (r"$\to$", 1.0, False),
    "←": (r"$\leftarrow$", 1.0, False),
    "↔": (r"$\leftrightarrow$", 1.0, False),
    "≤": (r"$\leq$", 0.78, False),
    "≥": (r"$\geq$", 0.78, False),
    "≈": (r"$\approx$", 0.78, False),
    "≠": (r"$\neq$", 0.78, False),
    "∞": (r"$\infty$", 1.0, False),
    "µ": (r"$\mu$", 0.6, False),
    "§": (r"\S{}", 0.44, False),
    "¶": (r"\P{}", 0.61, False),
    "©": (r"\textcopyright{}", 1.0, False),
    "®": (r"\textregistered{}", 1.0, False),
    "™": (r"\texttrademark{}", 1.0, False),
    "£": (r"\pounds{}", 0.67, False),
    "€": (r"\texteuro{}", 0.75, False),
    "¥": (r"\textyen{}", 0.75, False),
    "¢": (r"\textcent{}", 0.5, False),
    "¡": (r"\textexclamdown{}", 0.28, False),
    "¿": (r"\textquestiondown{}", 0.47, False),
    "†": (r"\dag{}", 0.44, False),
    "‡": (r"\ddag{}", 0.44, False),
}

_GREEK = {
    "α": "alpha",
    "β": "beta",
    "γ": "gamma",
    "δ": "delta",
    "ε": "epsilon",
    "ζ": "zeta",
    "η": "eta",
    "θ": "theta",
    "ι": "iota",
    "κ": "kappa",
    "λ": "lambda",
    "μ": "mu",
    "ν": "nu",
    "ξ": "xi",
    "π": "pi",
    "ρ": "rho",
    "σ": "sigma",
    "ς": "varsigma",
    "τ": "tau",
    "υ": "upsilon",
    "φ": "phi",
    "χ": "chi",
    "ψ": "psi",
    "ω": "omega",
    "Γ": "Gamma",
    "Δ": "Delta",
    "Θ": "Theta",
    "Λ": "Lambda",
    "Ξ": "Xi",
    "Π": "Pi",
    "Σ": "Sigma",
    "Υ": "Upsilon",
    "Φ": "Phi",
    "Ψ": "Psi",
    "Ω": "Omega",
}
# Greek letters drawn like Latin ones (and omicron, which math mode has no symbol for).
_GREEK_LATIN = dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΧοϵϑϕϖϰϱ", "ABEZHIKMNOPTXo" + "εθφπκρ", strict=True))

# A Greek word (GREEK_WORD letters or more) is transliterated; a letter or two (α-Net, Ωmega) stays a symbol.
GREEK_WORD = 4
_GREEK_ROMAN = dict(
    zip(
        "αβγδεζηθικλμνξοπρσςτυφχψω",
        [
            "a",
            "v",
            "g",
            "d",
            "e",
            "z",
            "i",
            "th",
            "i",
            "k",
            "l",
            "m",
            "n",
            "x",
            "o",
            "p",
            "r",
            "s",
            "s",
            "t",
            "y",
            "f",
            "ch",
            "ps",
            "o",
        ],
        strict=True,
    )
)

# Russian, Ukrainian and Belarusian letters (a simple scientific transliteration).
_CYRILLIC_LOWER = {
    "а": "a",
    "б": "b",
    "в": "v",
    "г": "g",
    "ґ": "g",
    "д": "d",
    "е": "e",
    "ё": "e",
    "є": "je",
    "ж": "zh",
    "з": "z",
    "и": "i",
    "і": "i",
    "ї": "ji",
    "й": "j",
    "к": "k",
    "л": "l",
    "м": "m",
    "н": "n",
    "о": "o",
    "п": "p",
    "р": "r",
    "с": "s",
    "т": "t",
    "у": "u",
    "ў": "u",
    "ф": "f",
    "х": "kh",
    "ц": "ts",
    "ч": "ch",
    "ш": "sh",
    "щ": "shch",
    "ъ": "",
    "ы": "y",
    "ь": "",
    "э": "e",
    "ю": "ju",
    "я": "ja",
}

# Computer Modern widths in ems, by class (cmr10; bold is about a tenth wider).
_NARROW = set("ijl.,:;!|'`")
_HALF_NARROW = set('frt()[]-/"*')
_WIDE_LOWER = set("mw")
_WIDE_UPPER = set("MW")
UNKNOWN = "?"


def ascii_width(ch: str) -> float:
    """The width of an ASCII character in ems (escaped specials: about an en)."""
    if ch == " ":
        return 0.33
    if ch in _NARROW:
        return 0.28
    if ch in _HALF_NARROW:
        return 0.39
    if ch.isdigit():
        return 0.5
    if ch in _WIDE_LOWER:
        return 0.83
    if ch in _WIDE_UPPER:
        return 1.03
    if ch.islower():
        return 0.53
    if ch.isupper():
        return 0.75
    return 0.78


@dataclass(frozen=True)
class Piece:
    """One character of a name as LaTeX sets it: its source, its width in ems, whether it is a space, and
    whether it needs the T1 font encoding."""

    latex: str
    width: float
    space: bool = False
    t1: bool = False


def _ascii_piece(ch: str) -> Piece:
    if ch.isspace():
        return Piece(" ", 0.33, space=True)
    if ch in _SPECIAL:
        return Piece(_SPECIAL[ch], 0.5 if ch in "_{}|" else 0.78)
    return Piece(ch, ascii_width(ch))


def _accented(ch: str) -> Piece | None:
    """A letter with accents as accent commands (NFD: base letter, then marks), if its base is ASCII."""
    decomposed = unicodedata.normalize("NFD", ch)
    base, marks = decomposed[0], decomposed[1:]
    if not base.isascii() or not base.isalpha() or not marks:
        return None
    latex, t1 = base, False
    for mark in marks:
        command = _ACCENTS.get(mark)
        if command is None:
            continue  # a mark LaTeX has no accent for: the letter alone
        latex = f"\\{command}{{{latex}}}"
        t1 = t1 or command in _T1_ONLY
    return Piece(latex, ascii_width(base), t1=t1)


def pieces(text: str | None) -> list[Piece]:
    """The characters of a text as LaTeX sets them; newlines and other spaces as single spaces."""
    text = unicodedata.normalize("NFC", text or "")
    greek_words = _greek_words(text)
    result: list[Piece] = []
    for index, ch in enumerate(text):
        for piece in _greek_roman(ch) if index in greek_words else _convert(ch):
            if not (piece.space and result and result[-1].space):  # a run of spaces sets as one
                result.append(piece)
    return result


def _is_greek(ch: str) -> bool:
    return unicodedata.normalize("NFD", ch)[:1].lower() in _GREEK_ROMAN


def _greek_words(text: str) -> set[int]:
    """The positions of the letters of Greek words (runs of GREEK_WORD Greek letters or more)."""
    found: set[int] = set()
    start = None
    for index, ch in enumerate([*text, " "]):
        if _is_greek(ch):
            start = index if start is None else start
            continue
        if start is not None and index - start >= GREEK_WORD:
            found.update(range(start, index))
        start = None
    return found


def _greek_roman(ch: str) -> list[Piece]:
    base = unicodedata.normalize("NFD", ch)[0]
    roman = _GREEK_ROMAN[base.lower()]
    roman = roman[:1].upper() + roman[1:] if base.isupper() else roman
    return [_ascii_piece(c) for c in roman]


def _convert(ch: str) -> list[Piece]:
    if ch.isascii():
        return [_ascii_piece(ch) if ch.isprintable() or ch.isspace() else Piece(" ", 0.33, space=True)]
    if ch in _SYMBOLS:
        latex, width, t1 = _SYMBOLS[ch]
        return [Piece(latex, width, t1=t1)]
    category = unicodedata.category(ch)
    if category.startswith("Z"):
        return [Piece(" ", 0.33, space=True)]
    if category.startswith(("C", "M")):
        return []  # controls and stray marks: nothing to set (names with invisible characters are refused)
    accented = _accented(ch)
    if accented is not None:
        return [accented]
    for letter in (ch, unicodedata.normalize("NFD", ch)[0]):  # as it is (й, ї), else without its accents
        if letter.lower() in _CYRILLIC_LOWER:
            latin = _CYRILLIC_LOWER[letter.lower()]
            latin = latin[:1].upper() + latin[1:] if letter.isupper() else latin
            return [_ascii_piece(c) for c in latin]
        if letter in _GREEK_LATIN:
            return _convert(_GREEK_LATIN[letter])
        if letter in _GREEK:
            return [Piece(f"$\\{_GREEK[letter]}$", 0.75 if letter.isupper() else 0.6)]
    folded = unicodedata.normalize("NFKD", ch)  # ligatures, full-width forms, superscripts: their plain letters
    if folded != ch and all(c.isascii() or unicodedata.category(c).startswith("M") for c in folded):
        return [_ascii_piece(c) for c in folded if c.isascii()]
    return [Piece(UNKNOWN, 0.47)]


def latex(parts: list[Piece], *, whole_words: bool = False) -> str:
    """The pieces as LaTeX; with `whole_words`, each run of non-space pieces (a token: "lr=1e-5", "v3.1_x")
    in an \\mbox, so that TeX neither hyphenates it nor breaks it after a - / or en dash: a line breaks at the
    name's spaces only, where `wrap` breaks it."""
    out: list[str] = []
    for index, piece in enumerate(parts):
        following = parts[index + 1] if index + 1 < len(parts) else None
        opens = whole_words and not piece.space and (index == 0 or parts[index - 1].space)
        out.append("\\mbox{" + piece.latex if opens else piece.latex)
        if piece.latex in _LIGATURE_STARTS and following is not None and following.latex[:1] in _LIGATURE_ENDS:
            out.append("{}")  # "--", "``", "?`" as typed, not a dash, a quote or an inverted question mark
        if whole_words and not piece.space and (following is None or following.space):
            out.append("}")
    return "".join(out)


_LIGATURE_STARTS = {"-", "`", "'", "?", "!", ",", "<", ">"}
_LIGATURE_ENDS = {"-", "`", "'", ","}


def tokens(parts: list[Piece]) -> list[list[Piece]]:
    """The runs of non-space pieces: what a line never breaks inside."""
    result: list[list[Piece]] = []
    for index, piece in enumerate(parts):
        if piece.space:
            continue
        if index == 0 or parts[index - 1].space:
            result.append([])
        result[-1].append(piece)
    return result


def widest_token(parts: list[Piece]) -> float:
    """The width in ems of the widest token: the narrowest line the text can be set in without a token
    sticking out of it."""
    return max((width(token) for token in tokens(parts)), default=0.0)


def latex_text(text: str | None, *, whole_words: bool = False) -> str:
    """Text safe in a LaTeX table cell, in ASCII (see the module's docstring)."""
    return latex(pieces(text), whole_words=whole_words)


def needs_t1(text: str | None) -> bool:
    return any(piece.t1 for piece in pieces(text))


def width(parts: list[Piece]) -> float:
    return sum(piece.width for piece in parts)


def wrap(parts: list[Piece], line: float) -> list[list[Piece]]:
    """The pieces in lines no wider than `line` ems, broken at spaces only, as TeX breaks
    latex(whole_words=True) in a ragged-right cell (first fit: the fewest lines). A token wider than a line
    stands on a line of its own, sticking out: the layout gives a name's cell its widest token."""
    lines: list[list[Piece]] = []
    current: list[Piece] = []
    for token in tokens(parts):
        if current and width(current) + SPACE.width + width(token) <= line:
            current = [*current, SPACE, *token]
            continue
        if current:
            lines.append(current)
        current = token
    if current or not lines:
        lines.append(current)
    return lines


SPACE = Piece(" ", 0.33, space=True)
