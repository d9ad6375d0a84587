"""Configured task types (app/evaluation/configured): NLVR2 and VQA v2 written as configs score every generated
file exactly as the built-in families do (a differential test: the configuration is proven, not assumed), the
other shapes and layouts score as declared, and bad configs are refused naming the key."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from app.evaluation import ValidationError, get_task
from app.evaluation.configured import ConfigError, configured_task, parse, task_config_schema
from app.evaluation.subsets import QUERIED, SEALED
from tests.differential import cases

NLVR2_CONFIG: dict[str, Any] = {
    "type": "classification",
    "label": "NLVR2 (configured)",
    "unit_noun": "sentences",
    "labels": ["true", "false"],
    "case": "insensitive",
    "gold": {"format": "jsonl", "id": "identifier", "label": "label"},
    "predictions": {"format": "csv", "id": "identifier", "label": "prediction", "header": "optional"},
    "group_by": {"field": "sentence"},
}
VQA_V2_CONFIG: dict[str, Any] = {
    "type": "short-answer",
    "label": "VQA v2 (configured)",
    "unit_noun": "questions",
    "scoring": "soft",
    "normalise": "vqa",
    "gold": {
        "format": "json",
        "records": "annotations",
        "id": "question_id",
        "label": "answers",
        "answer_key": "answer",
    },
    "predictions": {"format": "json", "id": "question_id", "label": "answer"},
    "subset_fields": ["answer_type", "question_type"],
}


def _refusal(task, data, gold):
    with pytest.raises(ValidationError) as refused:
        task.parse(data, gold)
    return sorted(problem.line for problem in refused.value.problems if problem.line is not None), refused.value.total


def _same_everywhere(ours, builtin, gold_ours, gold_builtin, files, subsets):
    """Every file scores, counts and lays out the same under both task types."""
    parsed_ours = [ours.parse(data, gold_ours) for data in files]
    parsed_builtin = [builtin.parse(data, gold_builtin) for data in files]
    stacked_ours, stacked_builtin = np.stack(parsed_ours), np.stack(parsed_builtin)
    assert np.array_equal(
        ours.unit_correctness(gold_ours, stacked_ours), builtin.unit_correctness(gold_builtin, stacked_builtin)
    )
    assert np.array_equal(ours.unit_scores(gold_ours, stacked_ours), builtin.unit_scores(gold_builtin, stacked_builtin))
    assert ours.unit_points(gold_ours) == builtin.unit_points(gold_builtin)
    for one_ours, one_builtin in zip(parsed_ours, parsed_builtin, strict=True):
        assert ours.score(gold_ours, one_ours, subsets) == builtin.score(gold_builtin, one_builtin, subsets)
        assert np.array_equal(ours.decode(ours.encode(one_ours), gold_ours.n), one_ours)
        assert np.array_equal(
            ours.zero_one_losses(gold_ours, one_ours), builtin.zero_one_losses(gold_builtin, one_builtin)
        )
    assert ours.score_batch(gold_ours, stacked_ours, subsets) == builtin.score_batch(
        gold_builtin, stacked_builtin, subsets
    )
    outcomes_ours = ours.example_outcomes(gold_ours, stacked_ours)
    outcomes_builtin = builtin.example_outcomes(gold_builtin, stacked_builtin)
    # The built-in leaves "all_right" out (no consistency, its primary metric counted); where both give it, equal.
    if "all_right" in outcomes_builtin:
        assert np.array_equal(outcomes_ours["all_right"], outcomes_builtin["all_right"])
    for metric, (counts, per) in outcomes_builtin["counts"].items():
        assert np.array_equal(outcomes_ours["counts"][metric][0], counts) and outcomes_ours["counts"][metric][1] == per
    assert outcomes_ours.get("points") == outcomes_builtin.get("points")
    assert ours.metrics == builtin.metrics and ours.primary_metric == builtin.primary_metric
    assert ours.tie_break_metric == builtin.tie_break_metric
    for metric in builtin.metrics:
        for indices in (None, *subsets.values()):
            assert ours.metric_units(gold_ours, metric, indices) == builtin.metric_units(gold_builtin, metric, indices)
        assert ours.metric(metric).counts == builtin.metric(metric).counts


# --- NLVR2 as a configured classification -----------------------------------------------------------------------


# The built-in's own rule, a sentence's examples by identifier (split-set and sentence, the pair id dropped).
NLVR2_BY_IDENTIFIER = {**NLVR2_CONFIG, "group_by": {"id_pattern": r"^(.+)-\d+-(\d+)$"}}


@pytest.mark.parametrize("config", [NLVR2_CONFIG, NLVR2_BY_IDENTIFIER], ids=["by-sentence", "by-identifier"])
@pytest.mark.parametrize("seed,size", [(0, 40), (1, 57), (2, 24)])
def test_configured_nlvr2_scores_every_generated_file_as_the_builtin(seed, size, config):
    ours, builtin = configured_task(config), get_task("nlvr2")
    data = builtin.synthetic_gold(size, seed=seed)
    gold_ours, gold_builtin = ours.read_gold(data), builtin.read_gold(data)
    assert gold_ours.ids.tolist() == gold_builtin.ids.tolist()
    assert np.array_equal(gold_ours.groups, gold_builtin.groups)
    assert np.array_equal(gold_ours.labels == 0, gold_builtin.labels)  # class 0: "true"
    subsets = builtin.derive_subsets(gold_builtin, "writer")
    assert ours.derive_subsets(gold_ours) == {}  # the visual-bias subsets are NLVR2's own: passed to both
    whole_groups = np.flatnonzero(gold_builtin.groups % 2 == 0).astype(np.int32)
    subsets[QUERIED], subsets[SEALED] = whole_groups, np.setdiff1d(np.arange(size), whole_groups).astype(np.int32)
    files = [
        builtin.synthetic_predictions(
            data, accuracy, seed=seed + i, header=header, shuffle=shuffle, group_correlation=corr
        )
        for i, (accuracy, header, shuffle, corr) in enumerate(
            [(0.0, False, True, 0.0), (0.55, True, False, 0.5), (0.9, True, True, 0.0), (1.0, False, False, 0.0)]
        )
    ]
    files.append(builtin.synthetic_constant(data, header=True, shuffle=True, seed=seed))
    files.append(files[1].replace(b"True", b"TRUE").replace(b"False", b" false").replace(b"\n", b"\r\n"))
    _same_everywhere(ours, builtin, gold_ours, gold_builtin, files, subsets)
    votes_ours = ours.label_votes(gold_ours, np.stack([ours.parse(f, gold_ours) for f in files]))[0]
    votes_builtin = builtin.label_votes(gold_builtin, np.stack([builtin.parse(f, gold_builtin) for f in files]))[0]
    assert np.array_equal(votes_ours.gold == 0, votes_builtin.gold == 1)  # the same labels, as classes of each
    assert np.array_equal(votes_ours.votes == 0, votes_builtin.votes == 1)


def test_configured_nlvr2_refuses_the_bad_files_the_builtin_refuses_on_the_same_lines():
    ours, builtin = configured_task(NLVR2_CONFIG), get_task("nlvr2")
    data = builtin.synthetic_gold(24, seed=3)
    gold_ours, gold_builtin = ours.read_gold(data), builtin.read_gold(data)
    good = builtin.synthetic_predictions(data, 0.7, seed=1, header=True, shuffle=False)
    lines = good.decode().splitlines()
    bad_files = {
        "unknown id": "\n".join(lines + ["dev-99999-0-0,true"]),
        "duplicate id": "\n".join(lines + [lines[3]]),
        "missing id": "\n".join(lines[:5] + lines[6:]),
        "invalid label": "\n".join(lines[:4] + [lines[4].split(",")[0] + ",maybe"] + lines[5:]),
        "three columns": "\n".join(lines[:7] + [lines[7] + ",x"] + lines[8:]),
        "empty": "  \n\n",
        "binary": "\n".join(lines[:3]) + "\x00",
        "several": "\n".join(lines[:2] + ["nope,true", lines[3].split(",")[0] + ",yes"] + lines[4:] + [lines[9]]),
    }
    for name, text in bad_files.items():
        assert _refusal(ours, text.encode(), gold_ours) == _refusal(builtin, text.encode(), gold_builtin), name


# --- VQA v2 as a configured short answer ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_configured_vqa_v2_scores_every_generated_file_as_the_builtin(seed):
    ours, builtin = configured_task(VQA_V2_CONFIG), get_task("vqa-v2")
    for data, files in (
        cases.make_case("vqa-v2", seed, 50),  # the normalisation's every branch
        (
            builtin.synthetic_gold(60, seed=seed),
            [
                builtin.synthetic_predictions(builtin.synthetic_gold(60, seed=seed), a, seed=seed)
                for a in (0.0, 0.6, 1.0)
            ],
        ),
    ):
        gold_ours, gold_builtin = ours.read_gold(data), builtin.read_gold(data)
        assert gold_ours.ids.tolist() == gold_builtin.ids.tolist()
        subsets = builtin.derive_subsets(gold_builtin)
        assert {name: indices.tolist() for name, indices in ours.derive_subsets(gold_ours).items()} == {
            name: indices.tolist() for name, indices in subsets.items()
        }
        _same_everywhere(ours, builtin, gold_ours, gold_builtin, files, subsets)
        assert ours.label_votes(gold_ours, np.stack([ours.parse(f, gold_ours) for f in files])) == []


def test_configured_vqa_v2_refuses_the_bad_files_the_builtin_refuses_on_the_same_lines():
    ours, builtin = configured_task(VQA_V2_CONFIG), get_task("vqa-v2")
    data, files = cases.make_case("vqa-v2", 4, 30)
    gold_ours, gold_builtin = ours.read_gold(data), builtin.read_gold(data)
    entries = json.loads(files[0])
    spread = ("[\n" + ",\n".join(json.dumps(entry) for entry in entries) + "\n]").encode()
    assert _refusal(ours, spread.replace(b"[\n", b"[\n3,\n", 1), gold_ours) == _refusal(
        builtin, spread.replace(b"[\n", b"[\n3,\n", 1), gold_builtin
    )
    for name, bad in cases.make_bad_files("vqa-v2", data):
        for text in (bad, bad.replace(b"}, {", b"},\n{")):  # each entry on its own line: the lines named tell
            assert _refusal(ours, text, gold_ours) == _refusal(builtin, text, gold_builtin), name


# --- the other shapes and layouts -------------------------------------------------------------------------------


def _task(**config):
    return configured_task(config)


def test_three_way_classification_case_rules_and_a_required_csv_header():
    base = {
        "type": "classification",
        "labels": ["entailment", "neutral", "Contradiction"],
        "gold": {"format": "csv", "id": "pair", "label": "gold"},
        "predictions": {"format": "csv", "id": "pair", "label": "guess", "header": "required"},
        "subset_fields": ["genre"],
    }
    gold_file = (
        b"pair,gold,genre\np1,entailment,fiction\np2,neutral,travel\np3,Contradiction,fiction\np4,neutral,travel\n"
    )
    upload = b"model,guess,pair\nm,ENTAILMENT,p1\nm,neutral,p2\nm,contradiction,p3\nm,entailment,p4\n"
    insensitive = _task(**base)
    gold = insensitive.read_gold(gold_file)
    assert insensitive.derive_subsets(gold).keys() == {"genre:fiction", "genre:travel"}
    scores = insensitive.score(gold, insensitive.parse(upload, gold), insensitive.derive_subsets(gold))
    assert scores == {
        "all": {"accuracy": 75.0},
        "genre:fiction": {"accuracy": 100.0},
        "genre:travel": {"accuracy": 50.0},
    }
    sensitive = _task(**base, case="sensitive")
    assert _refusal(sensitive, upload, sensitive.read_gold(gold_file)) == ([2, 4], 2)
    with pytest.raises(ValidationError, match="line 3: .*'gold'"):
        insensitive.read_gold(gold_file.replace(b"p2,neutral", b"p2,unsure"))
    with pytest.raises(ValidationError, match="the header line must name the columns pair and guess"):
        insensitive.parse(b"pair,prediction\np1,neutral\n", gold)


@pytest.mark.parametrize("answer,written", [("index", [1, 0, 3]), ("letter", ["b", "A", "D"])])
def test_multiple_choice_by_index_or_letter_in_json_lines(answer, written):
    task = _task(
        type="multiple-choice",
        options=4,
        answer=answer,
        gold={"format": "jsonl", "id": "qid", "label": "answer"},
        predictions={"format": "jsonl", "id": "qid", "label": "choice"},
        group_by={"id_pattern": r"^(.+)-\d+$"},
    )
    gold_written = [1, 2, 3] if answer == "index" else ["B", "C", "D"]
    gold_file = "".join(json.dumps({"qid": f"q{i // 2}-{i}", "answer": v}) + "\n" for i, v in enumerate(gold_written))
    gold = task.read_gold(gold_file.encode())
    upload = "".join(json.dumps({"qid": f"q{i // 2}-{i}", "choice": v}) + "\n" for i, v in enumerate(written))
    # q0-0 right, q0-1 wrong, q1-2 right: 2 of 3 examples, 1 of 2 groups.
    assert task.score(gold, task.parse(upload.encode(), gold)) == {
        "all": {"accuracy": pytest.approx(200 / 3), "consistency": 50.0}
    }
    wrong = [*written[:1], 7 if answer == "index" else "Q", *written[2:]]
    out_of_range = "".join(json.dumps({"qid": f"q{i // 2}-{i}", "choice": v}) + "\n" for i, v in enumerate(wrong))
    assert _refusal(task, out_of_range.encode(), gold) == ([2], 1)
    assert task.parse(task.sample(gold), gold).tolist() == [0, 0, 0]
    synthetic = task.synthetic_gold(20, seed=1)
    parsed = task.read_gold(synthetic)
    assert (
        task.score(parsed, task.parse(task.synthetic_predictions(synthetic, 1.0, seed=2), parsed))["all"]["accuracy"]
        == 100.0
    )


def test_exact_short_answer_with_accepted_answers_lowercased_in_json():
    task = _task(
        type="short-answer",
        scoring="exact",
        normalise="lower",
        gold={"format": "json", "id": "id", "label": "answers"},
        predictions={"format": "json", "id": "id", "label": "text"},
    )
    gold = task.read_gold(
        json.dumps(
            [{"id": "a", "answers": ["Paris"]}, {"id": "b", "answers": "4"}, {"id": 7, "answers": ["two", "2"]}]
        ).encode()
    )
    upload = json.dumps([{"id": "a", "text": " PARIS "}, {"id": "b", "text": "four"}, {"id": 7, "text": "2"}]).encode()
    assert task.score(gold, task.parse(upload, gold)) == {"all": {"accuracy": pytest.approx(200 / 3)}}
    assert task.unit_points(gold) == 1 and task.label_votes(gold, task.parse(upload, gold)[None]) == []
    grouped = _task(**{**task.config.model_dump(), "group_by": {"id_pattern": r"^(\D*)"}})  # p-1 and p-2; 7 alone
    gold_grouped = grouped.read_gold(
        json.dumps([{"id": "p-1", "answers": ["x"]}, {"id": "p-2", "answers": "y"}, {"id": 7, "answers": "z"}]).encode()
    )
    both = grouped.parse(
        b'[{"id": "p-1", "text": "X"}, {"id": "p-2", "text": "no"}, {"id": 7, "text": "z"}]', gold_grouped
    )
    assert grouped.score(gold_grouped, both) == {"all": {"accuracy": pytest.approx(200 / 3), "consistency": 50.0}}
    soft = _task(**{**VQA_V2_CONFIG, "group_by": {"field": "image_id"}, "subset_fields": []})
    data = get_task("vqa-v2").synthetic_gold(30, seed=1)  # three questions an image
    gold_soft = soft.read_gold(data)
    stacked = np.stack(
        [soft.parse(get_task("vqa-v2").synthetic_predictions(data, a, seed=3), gold_soft) for a in (0.5, 1.0)]
    )
    full = soft.unit_correctness(gold_soft, stacked)
    by_image = [full[:, gold_soft.groups == g].all(axis=1) for g in range(gold_soft.n_groups)]
    assert [s["all"]["consistency"] for s in soft.score_batch(gold_soft, stacked)] == pytest.approx(
        list(100 * np.mean(by_image, axis=0))
    )
    vqa_exact = _task(**{**task.config.model_dump(), "normalise": "vqa"})
    gold_vqa = vqa_exact.read_gold(json.dumps([{"id": "a", "answers": "two dogs"}]).encode())
    assert (
        vqa_exact.score(gold_vqa, vqa_exact.parse(b'[{"id": "a", "text": "2 Dogs."}]', gold_vqa))["all"]["accuracy"]
        == 100.0
    )
    with pytest.raises(ValidationError, match="line 1: entry 1: a: text must be a string"):
        task.parse(b'[{"id": "a", "text": 3}, {"id": "b", "text": "4"}, {"id": 7, "text": "2"}]', gold)


def test_every_layout_round_trips_its_synthetic_files():
    for gold_format in ("json", "jsonl", "csv"):
        for prediction_format, header in (
            ("json", "optional"),
            ("jsonl", "optional"),
            ("csv", "optional"),
            ("csv", "required"),
            ("csv", "none"),
        ):
            task = _task(
                type="classification",
                labels=["cat", "dog", "bird"],
                gold={"format": gold_format, "id": "image", "label": "animal"},
                predictions={"format": prediction_format, "id": "image", "label": "animal", "header": header},
                group_by={"field": "photographer"},
            )
            data = task.synthetic_gold(30, seed=2, split="test")
            gold = task.read_gold(data)
            assert gold.n == 30 and gold.n_groups == 8
            for accuracy in (0.0, 1.0):
                upload = task.synthetic_predictions(data, accuracy, seed=1, header=True)
                assert task.score(gold, task.parse(upload, gold))["all"] == {
                    "accuracy": 100 * accuracy,
                    "consistency": 100 * accuracy,
                }
            assert task.parse(task.sample(gold), gold).tolist() == [0] * 30


def test_a_config_is_one_object_and_its_name_tells_configs_apart():
    assert configured_task(NLVR2_CONFIG) is configured_task(json.dumps(NLVR2_CONFIG))
    assert configured_task(NLVR2_CONFIG) is configured_task(
        {**NLVR2_CONFIG, "predictions": {**NLVR2_CONFIG["predictions"]}}
    )
    other = configured_task({**NLVR2_CONFIG, "case": "sensitive"})
    assert other.name != configured_task(NLVR2_CONFIG).name and other.name.startswith("classification-")
    assert "classification" in json.dumps(task_config_schema())


@pytest.mark.parametrize(
    "change,message",
    [
        ({"labels": ["yes", "Yes"]}, "task.labels: each label at most once"),
        ({"labels": ["yes"]}, "task.labels: List should have at least 2 items"),
        ({"labels": ["x" * 101, "y"]}, "task.labels[0]: String should have at most 100 characters"),
        ({"type": "regression"}, "task.type: expected one of classification, multiple-choice, short-answer"),
        ({"colour": "red"}, "task.colour: unknown key"),
        ({"group_by": {"id_pattern": "(unclosed"}}, "task.group_by.id_pattern: not a valid regular expression"),
        ({"group_by": {"id_pattern": r"\d+"}}, "task.group_by.id_pattern: the regular expression must capture"),
        ({"group_by": {"field": "a", "id_pattern": "(a)"}}, "task.group_by: give exactly one of field or id_pattern"),
        ({"group_by": {"id_pattern": "^((a+)+)$"}}, "task.group_by.id_pattern: a repetition inside a repetition"),
        ({"group_by": {"id_pattern": r"^(?:(\w+-)*)(\d+)$"}}, "task.group_by.id_pattern: a repetition inside a"),
        (
            {"gold": {"format": "xml", "id": "a", "label": "b"}},
            "task.gold.format: Input should be 'json', 'jsonl' or 'csv'",
        ),
        ({"gold": {"format": "jsonl", "id": "a", "label": "b", "records": "r"}}, "task.gold.records: only a json gold"),
        ({"subset_fields": ["identifier"]}, "task.subset_fields: 'identifier' is the gold file's identifier or label"),
    ],
)
def test_bad_configs_are_refused_naming_the_key(change, message):
    with pytest.raises(ConfigError) as refused:
        parse({**NLVR2_CONFIG, **change})
    assert any(problem.startswith(message) or message in problem for problem in refused.value.problems), (
        refused.value.problems
    )


def test_a_refusal_gives_each_key_path_for_a_bundle_to_place():
    with pytest.raises(ConfigError) as refused:
        parse({**NLVR2_CONFIG, "labels": ["yes", "x" * 101], "group_by": {"id_pattern": "x"}, "colour": 1})
    assert sorted(refused.value.errors) == [
        (("colour",), "unknown key"),
        (("group_by", "id_pattern"), "the regular expression must capture the group, e.g. '^(.+)-\\d+$'"),
        (("labels", 1), "String should have at most 100 characters"),
    ]


def test_bad_shape_keys_are_refused_naming_the_key():
    mc = {"type": "multiple-choice", "gold": NLVR2_CONFIG["gold"], "predictions": NLVR2_CONFIG["predictions"]}
    with pytest.raises(ConfigError, match=r"task.options: Input should be less than or equal to 26"):
        parse({**mc, "options": 27})
    with pytest.raises(ConfigError, match=r"task.options: Field required"):
        parse(mc)
    soft = {**VQA_V2_CONFIG, "gold": {"format": "csv", "id": "a", "label": "b"}}
    with pytest.raises(ConfigError, match="task.scoring: soft scoring needs"):
        parse(soft)


def test_a_bad_gold_file_is_refused_naming_each_line():
    task = configured_task(NLVR2_BY_IDENTIFIER)
    lines = [
        '{"identifier": "dev-1-0-0", "label": "True", "sentence": "s"}',
        '{"identifier": "dev-1-1-0", "label": "maybe", "sentence": "s"}',
        '{"identifier": "dev-1-0-0", "label": "False", "sentence": "s"}',
        "{not json",
        '{"identifier": "nohyphens", "label": "true"}',
        '["a list"]',
    ]
    with pytest.raises(ValidationError) as refused:
        task.read_gold("\n".join(lines).encode())
    assert [str(problem) for problem in refused.value.problems] == [
        "line 2: missing or invalid 'label' (one of true, false (any case)) for 'dev-1-1-0'",
        "line 3: duplicate identifier 'dev-1-0-0' (first on line 1)",
        "line 4: invalid JSON (Expecting property name enclosed in double quotes at column 2)",
        "line 5: identifier 'nohyphens' does not match group_by.id_pattern ^(.+)-\\d+-(\\d+)$",
        "line 6: expected an object",
    ]
    by_field = configured_task({**NLVR2_CONFIG, "subset_fields": ["writer"]})
    with pytest.raises(ValidationError, match="line 1: missing 'sentence' \\(group_by.field\\) for 'dev-1-0-0'"):
        by_field.read_gold(b'{"identifier": "dev-1-0-0", "label": "True", "writer": "w"}\n')
    with pytest.raises(ValidationError, match="no example has the field 'writer' that subset_fields names"):
        by_field.read_gold(b'{"identifier": "dev-1-0-0", "label": "True", "sentence": "s"}\n')
