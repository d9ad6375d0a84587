"""The demo's crowded board (issue 38): one public board of 60 published entries whose fact sheets are filled
in, to slice by track (zero-shot, small, verified) and to compare. Plain data, seeded: the same runs on every
load, so the demo stays idempotent and the golden walk's answers stay the same.

The board is the NLVR2 demo's landing split (Test-P, what a visitor sees first, and the split the models view
ranks by); its four demo teams and Sweep Lab's twelve runs are already there, the crowd adds the other 44:
about a third zero-shot, from 60M to 70B parameters (so the `small` track, parameters <= 1e9, holds a good
part), open weights mixed, code URLs with open weights, a few verified by a maintainer, from six more teams.
Scores follow size and are rounded to half a point, so many entries tie within sampling and share ranks.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

BENCHMARK = "demo-nlvr2"
SPLIT = "test-p"
SIZE = 60  # entries on the board: the four demo teams', Sweep Lab's twelve and the crowd's
TEAMS = (
    ("Kestrel AI", "Kestrel"),
    ("Lumen Vision", "Lumen"),
    ("Northwind NLP", "Northwind-VL"),
    ("Tidepool Lab", "Tide"),
    ("Meridian Research", "Meridian"),
    ("Open Pairs Collective", "OpenPair"),
)
_RUNS = 44
_ZERO_SHOT = 19  # with PixR's, 20 of 60
_VERIFIED = 5
_PARAMETERS = (
    60_000_000,
    86_000_000,
    125_000_000,
    220_000_000,
    350_000_000,
    560_000_000,
    900_000_000,
    1_300_000_000,
    3_000_000_000,
    7_000_000_000,
    13_000_000_000,
    34_000_000_000,
    70_000_000_000,
)
SEED = 38


@dataclass(frozen=True)
class CrowdRun:
    team: str
    model: str
    accuracy: float  # what the synthetic predictions are drawn to score
    description: str
    paper_url: str | None
    days_ago: int
    fields: dict[str, bool | int | str]
    verified: tuple[str, str] | None  # (note, link) of a maintainer's check

    def submitted_at(self, now: datetime) -> datetime:
        return now - timedelta(days=self.days_ago, hours=self.days_ago % 7)


def _size_text(parameters: int) -> str:
    """60M, 1.3B, 70B."""
    return f"{parameters // 10**6}M" if parameters < 10**9 else f"{parameters / 1e9:g}B"


def _slug(model: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in model.lower()).strip("-").replace("--", "-")


def runs() -> list[CrowdRun]:
    """The crowd's 44 runs, in the order they are stored (and so seeded)."""
    rng = random.Random(SEED)
    zero_shot = set(rng.sample(range(_RUNS), _ZERO_SHOT))
    made: list[CrowdRun] = []
    names: set[str] = set()
    for index in range(_RUNS):
        team, family = TEAMS[index % len(TEAMS)]
        parameters = rng.choice(_PARAMETERS)
        shot = index in zero_shot
        extra = not shot and rng.random() < 0.4
        # Large models keep their weights closed more often.
        open_weights = rng.random() < (0.75 if parameters < 10**10 else 0.35)
        model = f"{family}-{_size_text(parameters)}" + (" zero-shot" if shot else "")
        version = 2
        while model in names:  # a team's second run of a size: its next version
            model = f"{family}-{_size_text(parameters)} v{version}" + (" zero-shot" if shot else "")
            version += 1
        names.add(model)
        # About 7.5 points a tenfold of parameters, less 6 zero-shot; on half points, so entries tie.
        score = 0.62 + 0.075 * math.log10(parameters / 6e7) - (0.06 if shot else 0.0) + rng.uniform(-0.025, 0.025)
        accuracy = min(0.9, max(0.55, round(score * 200) / 200))
        fields: dict[str, bool | int | str] = {
            "zero_shot": shot,
            "extra_data": extra,
            "parameters": parameters,
            "open_weights": open_weights,
        }
        if open_weights:
            fields["code_url"] = f"https://example.org/code/{_slug(model)}"
        how = "zero-shot: never trained on the task" if shot else "fine-tuned on the training split"
        description = f"A {_size_text(parameters)}-parameter image-text model, {how}" + (
            ", with extra image-text pairs." if extra else "."
        )
        paper = f"https://example.org/papers/{_slug(family)}" if index % 3 == 0 else None
        made.append(CrowdRun(team, model, accuracy, description, paper, rng.randint(5, 700), fields, None))
    checked = rng.sample([i for i, run in enumerate(made) if run.fields["open_weights"]], _VERIFIED)
    for i in sorted(checked):
        note = "Reran the released code and weights: the scores match to 0.1 points."
        made[i] = replace(made[i], verified=(note, f"https://example.org/checks/{_slug(made[i].model)}"))
    return made
