"""Counts only means counts only (issue 23, item 4): on a blind test before its reveal whose feedback releases
scores (`full`), nothing anyone but a maintainer reads tells more than each entry's released counts.

The world: an NLVR2 benchmark with two hidden `full` splits made of the same gold file (2,000 synthetic
examples, 500 sentences; its derived bias subsets hold 725 and 1,002 examples, sizes that depend on the labels
and are never shown before the reveal). Two teams publish the same eight models on both splits with the same
number of errors on the whole split, on each subset and in each sentence, but on different examples: on Test-U
the entries' errors are nested (each entry's errors hold the better entries'), on its twin Test-V every entry's
are drawn afresh. Two pairs of entries on each split have the same counts. A visitor, a member of each team, the
API, every export and the models view are then read, and every number in them is tried for what it gives away:
- no subset size is printed (the whole split's size is public: teams predict on its examples);
- no value has more decimals than the release (the whole split's count resolution, ladder.count_decimals);
- a subset's released value alone is consistent with many subset sizes;
- score intervals: none on a subset; on the whole split the same for the same released value;
- ranks and rank intervals: the same for the same released value, the rank inside its interval;
- the twin splits read alike, number for number: nothing depends on which examples an entry got right.
After the reveal the pages show the sizes and the exact values again, as on any public split.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from app import synthetic
from app.db import db
from app.evaluation import get_task
from app.evaluation import ladder as ladder_rule
from app.models import Submission, Team
from app.services import catalog
from app.services.intake import submissions
from app.services.intake.submissions import Upload
from app.services.people import accounts
from tests.support.browser import login
from tests.support.users import PASSWORD, bearer, make_user

N = 2000
DECIMALS = ladder_rule.count_decimals(N)  # 2: what the release writes on the whole split
SUBSET_DECIMALS = 0  # and on a subset: whole percents (integrity.resolution)
SPLITS = ("test-u", "test-v")  # nested errors, and the twin with errors drawn afresh
TASK = get_task("nlvr2")
EMAILS = {"lab": "lab@example.org", "rivals": "rivals@example.org", "admin": "admin@example.org"}
ROLES = ("anonymous", "lab", "rivals")  # everyone but a maintainer
# (team, model, errors): each error in a sentence of its own, so that the counts on the whole split, on each
# subset and of whole sentences right are the same on both splits. beta/gamma and delta/epsilon tie.
ENTRIES = (
    ("lab", "alpha", 180),
    ("rivals", "beta", 192),
    ("lab", "gamma", 192),
    ("rivals", "delta", 210),
    ("lab", "epsilon", 210),
    ("rivals", "zeta", 240),
    ("lab", "eta", 300),
    ("rivals", "theta", 420),
)


@dataclass
class World:
    sizes: dict[str, int]  # subset -> examples
    sentences: int = 0  # the whole split's consistency groups: consistency's n, public (the identifiers tell them)
    ids: dict[tuple[str, str], int] = field(default_factory=dict)  # (split, model) -> submission id
    tokens: dict[str, str] = field(default_factory=dict)


def _classes(gold, subsets) -> np.ndarray:
    """Each example's subset: 0 balanced, 1 unbalanced, 2 neither."""
    found = np.full(gold.n, 2)
    found[subsets["balanced"]], found[subsets["unbalanced"]] = 0, 1
    return found


def _nested(groups: np.ndarray, rng) -> list[int]:
    """One example in each sentence, the sentences in a random order: entry i's errors are a prefix."""
    order = rng.permutation(groups.max() + 1)
    return [int(rng.choice(np.flatnonzero(groups == g))) for g in order]


def _afresh(groups: np.ndarray, classes: np.ndarray, wanted: np.ndarray, rng) -> list[int]:
    """Errors with `wanted` of each class, one a sentence, drawn at random."""
    while True:
        left, chosen = wanted.copy(), []
        for g in rng.permutation(groups.max() + 1):
            members = np.flatnonzero(groups == g)
            usable = [i for i in members if left[classes[i]] > 0]
            if usable:
                pick = int(rng.choice(usable))
                left[classes[pick]] -= 1
                chosen.append(pick)
            if not left.any():
                return chosen


def _file(gold_rows: list[dict], wrong: set[int]) -> bytes:
    lines = []
    for i, row in enumerate(gold_rows):
        right = row["label"].lower() == "true"
        lines.append(f"{row['identifier']},{(not right) if i in wrong else right}")
    return ("\n".join(lines) + "\n").encode()


def build(app) -> World:
    data = synthetic.nlvr2_gold(N, split="test", seed=7)
    rows = [json.loads(line) for line in data.decode().splitlines()]
    rng = np.random.default_rng(23)
    with app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        for slug in SPLITS:
            catalog.add_split("nlvr2", slug, data, hidden=True, name=slug.title())
            catalog.set_policy("nlvr2", slug, feedback="full", per_day=None, per_month=None, total=None)
        split = catalog.get_split("nlvr2", "test-u")
        inputs = catalog.scoring_inputs(split)
        gold, subsets = inputs.gold, inputs.subsets
        world = World({name: int(indices.size) for name, indices in subsets.items()}, gold.n_groups)
        _, groups = np.unique(np.asarray(gold.groups), return_inverse=True)
        classes = _classes(gold, subsets)
        users = {"admin": make_user(EMAILS["admin"], admin=True)}
        for role in ("lab", "rivals"):
            team = Team(name=role.title())
            db.session.add(team)
            db.session.commit()
            users[role] = make_user(EMAILS[role], team=team)
        for role, user in users.items():
            world.tokens[role] = accounts.create_token(user, "counts-only tests")[1]
        nested = _nested(groups, rng)
        for role, model, errors in ENTRIES:
            wrong = {"test-u": set(nested[:errors])}
            wanted = np.bincount(classes[nested[:errors]], minlength=3)
            wrong["test-v"] = set(_afresh(groups, classes, wanted, rng))
            for slug in SPLITS:
                upload = Upload(_file(rows, wrong[slug]), model_name=model)
                result = submissions.submit(users[role], None, "nlvr2", slug, upload)
                submissions.publish(users[role], result.id, description=f"{model} by {role}")
                world.ids[(slug, model)] = result.id
    return world


@pytest.fixture(scope="module")
def world(module_app):
    """Built once per module (the tests below only read it; the reveal builds its own)."""
    return build(module_app)


@pytest.fixture(scope="module")
def answers(module_app, world) -> list[tuple[str, str, str]]:
    """(role, what, body) of everything every role but the maintainers reads."""
    return [(role, what, body) for role in ROLES for what, body in _read(module_app, world, role)]


# --- reading everything ----------------------------------------------------------------------------------


COLUMNS = ("all:accuracy", "all:consistency", "balanced:accuracy", "unbalanced:accuracy")


def _client(app, role: str):
    client = app.test_client()
    if role in EMAILS:
        assert login(client, EMAILS[role], PASSWORD).status_code == 302, role
    return client


def _read(app, world: World, role: str) -> list[tuple[str, str]]:
    """(what, body) of every page, export and API answer about the blind tests this role may read."""
    client = _client(app, role)
    columns = "&".join(f"columns={key}" for key in COLUMNS)
    urls = ["/", "/leaderboards/nlvr2", "/leaderboards/nlvr2/models", "/api/v1/benchmarks"]
    urls += [f"/leaderboards/nlvr2/models/export.{fmt}" for fmt in ("csv", "json", "md", "tex")]
    urls += ["/api/v1/leaderboards/nlvr2/models"]
    for slug in SPLITS:
        for view in ("", "view=teams"):
            query = "&".join(part for part in (view, columns) if part)
            urls += [f"/leaderboards/nlvr2/{slug}?{query}", f"/api/v1/leaderboards/nlvr2/{slug}?{view}"]
            urls += [f"/leaderboards/nlvr2/{slug}/export.{fmt}?{query}" for fmt in ("csv", "json", "md", "tex")]
    urls += [f"/submissions/{sid}" for sid in world.ids.values()]
    found = []
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (role, url, response.status_code)
        found.append((url, response.get_data(as_text=True)))
    if role in world.tokens:
        for (_, model), sid in world.ids.items():
            response = client.get(f"/api/v1/submissions/{sid}", headers=bearer(world.tokens[role]))
            if response.status_code == 200:
                found.append((f"API submission {sid} ({model})", response.get_data(as_text=True)))
    return found


def _json_numbers(value, path=""):
    """(path, number) of every number in a JSON document (ids, ranks and counts included)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _json_numbers(inner, f"{path}/{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _json_numbers(inner, f"{path}/{i}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}[T ][\d:.]+")  # a time's seconds are not a score
_DECIMAL = re.compile(r"(?<![\w.])\d+\.(\d+)(?![\w.])")
_INTEGER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?![\w,]|\.\d)")


def _decimals(number: float | int) -> int:
    text = repr(number)
    return 0 if "." not in text or isinstance(number, int) else len(text.split(".")[1])


# --- the checks ------------------------------------------------------------------------------------------


def test_no_subset_size_is_printed(world, answers):
    sizes = set(world.sizes.values())
    assert sizes == {725, 1002}  # the seed's: none of them a number these pages print for another reason
    assert world.sentences not in sizes
    problems = []
    for role, what, body in answers:
        for token in _INTEGER.findall(body):
            if int(token.replace(",", "")) in sizes:
                problems.append(f"{role} {what}: {token}")
        # The whole split's n of each metric: its examples (accuracy), its sentences (consistency).
        public = {N, world.sentences}
        for shown in re.findall(r"n = ([\d,]+)", body):
            if int(shown.replace(",", "")) not in public:
                problems.append(f"{role} {what}: n = {shown}")
        if body.lstrip().startswith("{"):
            for path, number in _json_numbers(json.loads(body)):
                if path.endswith("/examples") and number not in public:
                    problems.append(f"{role} {what}: {path} = {number}")
    assert not problems, "\n".join(problems[:30])


def test_every_value_has_at_most_the_released_decimals(answers):
    problems = []
    for role, what, body in answers:
        if body.lstrip().startswith("{"):
            for path, number in _json_numbers(json.loads(body)):
                if _decimals(number) > DECIMALS:
                    problems.append(f"{role} {what}: {path} = {number!r}")
        else:
            for digits in _DECIMAL.findall(_MOMENT.sub("<moment>", body)):
                if len(digits) > DECIMALS:
                    problems.append(f"{role} {what}: ...{digits}")
        if what.split("?")[0].endswith(".csv"):
            for row in csv.reader(io.StringIO(body)):
                for cell in row:
                    if re.fullmatch(r"-?\d+\.\d+", cell) and len(cell.split(".")[1]) > DECIMALS:
                        problems.append(f"{role} {what}: {cell}")
    assert not problems, "\n".join(problems[:30])


def _consistent_sizes(value: float) -> list[int]:
    """Every n in 1..N for which some count k of n is released as `value` (100 k / n to SUBSET_DECIMALS)."""
    found = []
    for n in range(1, N + 1):
        k = round(value * n / 100)
        if any(0 <= c <= n and round(100 * c / n, SUBSET_DECIMALS) == value for c in (k - 1, k, k + 1)):
            found.append(n)
    return found


def _board(app, slug: str, view: str = "") -> dict:
    response = app.test_client().get(f"/api/v1/leaderboards/nlvr2/{slug}?{view}")
    assert response.status_code == 200
    return response.json


def test_a_released_subset_value_does_not_give_its_size_away(module_app, world):
    for slug in SPLITS:
        for entry in _board(module_app, slug)["entries"]:
            for subset in ("balanced", "unbalanced"):
                value = entry["scores"][subset]["accuracy"]["value"]
                candidates = _consistent_sizes(value)
                assert world.sizes[subset] in candidates
                assert len(candidates) >= 50, (entry["model_name"], subset, value, len(candidates))


def test_a_board_of_released_values_does_not_give_a_subset_size_away(module_app, world):
    """Read together, every value a board shows on one subset still fits many sizes (at the whole split's
    resolution six values left 725 or 1,450, and 1,002 alone: subsets are released in whole percents)."""
    for subset in ("balanced", "unbalanced"):
        values = {e["scores"][subset]["accuracy"]["value"] for s in SPLITS for e in _board(module_app, s)["entries"]}
        candidates = set(range(1, N + 1))
        for value in values:
            candidates &= set(_consistent_sizes(value))
        assert world.sizes[subset] in candidates
        assert len(candidates) >= 50, (subset, sorted(candidates)[:10])


def test_intervals_come_from_released_values_and_public_sizes_alone(module_app, world):
    for slug in SPLITS:
        for view in ("", "view=teams"):
            by_value: dict[tuple, set] = {}
            for entry in _board(module_app, slug, view)["entries"]:
                for subset, metrics in entry["scores"].items():
                    for metric, score in metrics.items():
                        if subset != "all":
                            assert score["ci_low"] is None and score["ci_high"] is None, (entry["model_name"], subset)
                            continue
                        assert score["ci_low"] <= score["value"] <= score["ci_high"]
                        by_value.setdefault((metric, score["value"]), set()).add((score["ci_low"], score["ci_high"]))
            assert all(len(bounds) == 1 for bounds in by_value.values()), by_value
    for role in ROLES:
        client = _client(module_app, role)
        for sid in world.ids.values():
            page = client.get(f"/submissions/{sid}").get_data(as_text=True)
            for subset in world.sizes:
                row = re.search(rf'<tr data-subset="{subset}">(.*?)</tr>', page, re.S)
                assert row is not None and 'class="ci"' not in row.group(1), (role, sid, subset)


def test_equal_released_values_get_equal_ranks_and_rank_intervals(module_app, world):
    for slug in SPLITS:
        for view in ("", "view=teams"):
            entries = _board(module_app, slug, view)["entries"]
            assert len(entries) == (len(ENTRIES) if not view else 2)
            by_value: dict[float, set] = {}
            for entry in entries:
                assert entry["rank_low"] <= entry["rank"] <= entry["rank_high"], entry["model_name"]
                value = entry["scores"]["all"]["accuracy"]["value"]
                by_value.setdefault(value, set()).add((entry["rank"], entry["rank_low"], entry["rank_high"]))
            assert all(len(ranks) == 1 for ranks in by_value.values()), by_value
            values = [entry["scores"]["all"]["accuracy"]["value"] for entry in entries]
            assert values == sorted(values, reverse=True)
            ranks = [entry["rank"] for entry in entries]
            assert ranks == sorted(ranks)


def _comparable(body: dict) -> list:
    return [
        {key: value for key, value in entry.items() if key not in ("submission_id", "submitted_at")}
        for entry in body["entries"]
    ]


def test_twin_splits_read_alike_number_for_number(module_app, world):
    """Same counts, other examples right: the same board, intervals and ranks (on Test-U the nested errors
    would separate neighbours in a paired test that the counts alone do not)."""
    for view in ("", "view=teams"):
        assert _comparable(_board(module_app, "test-u", view)) == _comparable(_board(module_app, "test-v", view))
    client = module_app.test_client()
    for fmt in ("csv", "md", "tex", "json"):
        bodies = []
        for slug in SPLITS:
            text = client.get(f"/leaderboards/nlvr2/{slug}/export.{fmt}").get_data(as_text=True)
            text = re.sub(r"\d{4}-\d{2}-\d{2}T[\d:.+]+", "<moment>", text)
            text = re.sub(r'"submission_id": \d+', '"submission_id": 0', text)
            bodies.append(text.replace("test-u", "<split>").replace("test-v", "<split>").replace("Test-U", "<S>"))
        bodies[1] = bodies[1].replace("Test-V", "<S>")
        assert bodies[0] == bodies[1], fmt
    pages = []
    for slug in SPLITS:
        page = client.get(f"/leaderboards/nlvr2/{slug}").get_data(as_text=True)
        body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]  # the rows (a header's links vary with the query)
        pages.append(_MOMENT.sub("<moment>", re.sub(r'(data-submission-id="|/submissions/)\d+', r"\1<id>", body)))
    assert pages[0] == pages[1]


def test_the_board_claims_no_paired_test_before_the_reveal(module_app, world):
    client = module_app.test_client()
    page = client.get("/leaderboards/nlvr2/test-u").get_data(as_text=True)
    latex = client.get("/leaderboards/nlvr2/test-u/export.tex").get_data(as_text=True)
    for text in (page, latex):
        assert "McNemar" not in text and "bootstrap" not in text


def test_maintainers_see_the_sizes(module_app, world):
    page = _client(module_app, "admin").get(f"/submissions/{world.ids[('test-u', 'alpha')]}").get_data(as_text=True)
    assert "n = 725" in page and "n = 1,002" in page


def test_after_the_reveal_everything_is_shown_as_on_a_public_split(app):
    world = build(app)
    with app.app_context():
        catalog.set_policy("nlvr2", "test-u", feedback="none")
        catalog.reveal_split("nlvr2", "test-u")
        submission = db.session.get(Submission, world.ids[("test-u", "alpha")])
        exact = {score.subset: score.value for score in submission.scores if score.metric == "accuracy"}
    page = app.test_client().get(f"/submissions/{world.ids[('test-u', 'alpha')]}").get_data(as_text=True)
    assert "n = 725" in page and "n = 1,002" in page
    entry = next(e for e in _board(app, "test-u")["entries"] if e["model_name"] == "alpha")
    for subset in ("all", "balanced", "unbalanced"):
        assert entry["scores"][subset]["accuracy"]["value"] == exact[subset]
    assert entry["scores"]["balanced"]["accuracy"]["ci_low"] is not None
    assert any(_decimals(entry["scores"][s]["accuracy"]["value"]) > DECIMALS for s in ("balanced", "unbalanced"))
