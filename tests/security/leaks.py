"""Detectors for hidden-split leaks in a response body or a log line.

- an identifier of a hidden split next to its gold label (`hfull-3-1-0,True`, `"hfull-3-1-0": true`,
  `<td>hfull-3-1-0</td><td>True</td>`, `"identifier": "hfull-3-1-0", "label": "True"`);
- a run of per-example booleans or 0/1 flags (a correctness vector, a prediction vector);
- raw lines of a hidden gold file.
"""

from __future__ import annotations

import re

from tests.support.security_world import World

# What may stand between an identifier and a label that belongs to it: quotes, punctuation, spaces, entities,
# table or list markup, and the words `label` / `gold`; not other words ("...'; expected true or false").
_BETWEEN = (
    r"""(?:[\s"',:;=|\[\]{}()]|&#3[49];|&#x2[27];|&quot;|&apos;|</?[A-Za-z][^<>]{0,40}>"""
    r"""|\blabel\b|\bgold\b){0,14}"""
)
_LABEL = r"(true|false|yes|no|1|0)(?![\w.])"
BOOLEAN_RUN = re.compile(r"(?:\b(?:true|false)\b[\s,;\"'\[\]]*){24,}", re.IGNORECASE)
BIT_STRING = re.compile(r"(?<![0-9A-Za-z])[01]{32,}(?![0-9A-Za-z])")
BIT_LIST = re.compile(r"(?:(?<![\d.])[01](?![\d.])[\s,;]+){32,}")
TRUTH = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class LeakDetector:
    def __init__(self, world: World):
        self.labels = {identifier: label for split in world.labels.values() for identifier, label in split.items()}
        names = alternatives(self.labels)
        self.pattern = re.compile(rf"(?<![\w-])({names})(?![\w-]){_BETWEEN}{_LABEL}", re.IGNORECASE)
        self.gold_lines = [line for split in world.labels for line in world.gold[split].decode().splitlines()[:5]]

    def leaks(self, text: str) -> list[str]:
        """Every leak found in `text`, described (empty: none)."""
        found = []
        pairs = [
            (match.group(1), TRUTH[match.group(2).lower()], match.group(0)) for match in self.pattern.finditer(text)
        ]
        # One prediction for every identifier (a split's sample file) says nothing of the labels: it sits
        # next to as many wrong labels as right ones. Anything else pairing an id with its label is a leak.
        constant = len({truth for _, truth, _ in pairs}) == 1 and any(
            truth != self.labels[identifier] for identifier, truth, _ in pairs
        )
        for identifier, truth, seen in [] if constant else pairs:
            if truth == self.labels[identifier]:
                found.append(f"{identifier} next to its gold label: {seen[:120]!r}")
        for name, pattern in (("booleans", BOOLEAN_RUN), ("bit string", BIT_STRING), ("0/1 list", BIT_LIST)):
            match = pattern.search(text)
            if match:
                found.append(f"a run of per-example {name}: {match.group(0)[:80]!r}")
        found += [f"a gold file line: {line[:80]!r}" for line in self.gold_lines if line in text]
        return found

    def gold_bytes(self, text: str) -> list[str]:
        """Only the raw gold-file check (applies to maintainers too: gold files are never served)."""
        return [f"a gold file line: {line[:80]!r}" for line in self.gold_lines if line in text]


def alternatives(words) -> str:
    """A regular expression matching any of `words`, the longest first where several match at one place, as
    one alternative per word would; but as a tree of shared prefixes, so a search costs about the same for
    10,000 words as for 10 (one alternative per word tried each at every position: ~15 s a module)."""
    tree: dict = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: dict) -> str:
        paths = [re.escape(char) + branch(child) for char, child in sorted(node.items()) if char]
        if not paths:
            return ""
        either = paths[0] if len(paths) == 1 else "(?:" + "|".join(paths) + ")"
        return f"(?:{either})?" if "" in node else either

    return branch(tree)


class SealedFigureDetector:
    """Figures of a blind test's sealed part in a response body or a log line: each stored submission's
    sealed-part scores and its whole-split scores (which, with the queried part's, give the sealed ones),
    written as JSON (the value itself), CSV (six decimals) or to three or four decimals; and the split's
    secret seal seed. A written form that some figure a viewer may see also takes (two files with the
    same count on both parts) proves nothing and is not looked for."""

    FORMATS = (repr, "{:.6f}".format, "{:.4f}".format, "{:.3f}".format)

    def __init__(self, forbidden: dict[str, float], allowed: list[float], secrets: list[str]):
        shown = {fmt(float(value)) for value in allowed for fmt in self.FORMATS}
        self.figures: dict[str, str] = {}
        for what, value in forbidden.items():
            for fmt in self.FORMATS:
                text = fmt(float(value))
                if text not in shown:
                    self.figures.setdefault(text, what)
        self.pattern = re.compile(r"(?<![\d.])(" + alternatives(self.figures) + r")(?!\d)") if self.figures else None
        self.secrets = [secret for secret in secrets if secret]

    def leaks(self, text: str) -> list[str]:
        found = [f"the seal seed {secret[:6]}..." for secret in self.secrets if secret in text]
        if self.pattern is not None:
            found += [
                f"{self.figures[match.group(1)]} written {match.group(1)}" for match in self.pattern.finditer(text)
            ]
        return found
