# Official Winoground statistics code (facebook/winoground on Hugging Face, statistics/compute_statistics.py),
# reduced to its scoring functions for differential tests.
#
# Source: the Hugging Face dataset repository facebook/winoground (gated; not on GitHub). Verbatim copy used:
#   https://github.com/juletx/spatial-reasoning, commit dbc96525575cca1daaebac106958e05ae1d04677 (2022-07-15,
#   "first commit", which imported the Hugging Face repository's files: data/examples.jsonl,
#   statistics/compute_statistics.py, statistics/model_scores/*.jsonl, license_agreement.txt, winoground.py),
#   path statistics/compute_statistics.py (git blob 359802423f7f654a128f7ad79c2f7a3d49f8fb7e). Later commits of
#   that repository edit the file (relative paths); they were NOT used.
# Licence:   none stated in the file; the dataset is under the Winoground Dataset License Agreement (Meta,
#            non-commercial research). No data of the dataset is copied here.
#
# Changes made (and nothing else):
#   1. This header.
#   2. Imports only the script's plotting/table/perplexity code needed are dropped: tabulate, transformers,
#      torch, tqdm, tags_with_examples, matplotlib (lines 3, 7-13 of the original). `random.seed(0)` (line 14)
#      is dropped too: it only seeded the bootstrap and would reseed the test process's global random.
#   3. Kept verbatim (original lines 15-35, 120-195): text_correct, image_correct, group_correct, load_results,
#      filter_examples, get_table_dict, bolden_table_dict. Dropped: the perplexity/caption-length helpers
#      (lines 36-119, 196-219, they need torch/transformers) and the module-level script (lines 220-408: model
#      list, printed LaTeX tables, plots). The subsets that script reports are listed in
#      tests/differential/reference.py (WINOGROUND_SUBSETS), quoted from its lines 290-320.
#   4. filter_examples(filter_dict) reads the hard-coded relative path "data/examples.jsonl"; it gets a keyword
#      parameter `examples_path="data/examples.jsonl"` (same default) used in place of the literal.
# Note: get_table_dict(..., bootstrap_confidence_intervals=True) calls scipy.mean, which modern SciPy no longer
# has; the harness never takes that branch (the original used it only for its confidence-interval table).

import json
import statistics
import numpy as np
import random
import scipy.stats


def text_correct(result):
    return result["c0_i0"] > result["c1_i0"] and result["c1_i1"] > result["c0_i1"]

def image_correct(result):
    return result["c0_i0"] > result["c0_i1"] and result["c1_i1"] > result["c1_i0"]

def group_correct(result):
    return image_correct(result) and text_correct(result)

def load_results(filename):
    results = {}
    for line in open(filename, "r").readlines():
        score_dict = json.loads(line)
        id, c, i = score_dict["label"].split("_")
        id = int(id)
        scores = results.get(id, {})
        scores["_".join([c,i])] = score_dict["score"]
        results[id] = scores
    return results


def filter_examples(filter_dict, examples_path="data/examples.jsonl"):  # harness change 4
    examples = [json.loads(line) for line in open(examples_path).readlines()]
    def filter_criteria(example):
        for key, value in filter_dict.items():
            if example[key] != value:
                return False
        return True
    filtered_ids = {example["id"] for example in filter(filter_criteria, examples)}
    return filtered_ids

def get_table_dict(models, filtered_ids=None, bootstrap_confidence_intervals=False):

    table_dict = {"Model": [], "Text": [], "Image": [], "Group": []}
    for filename, display_name, _, _, _ in models:
        results = load_results(filename)
        if filtered_ids is not None:
            filtered_results = {}
            for key, value in results.items():
                if key in filtered_ids:
                    filtered_results[key] = value
            results = filtered_results

        text_results = [text_correct(result) for result in results.values()]
        image_results = [image_correct(result) for result in results.values()]
        group_results = [group_correct(result) for result in results.values()]
        if bootstrap_confidence_intervals:
            text_bootstrap_result = scipy.stats.bootstrap(data=(text_results,), statistic=scipy.mean)
            image_bootstrap_result = scipy.stats.bootstrap(data=(image_results,), statistic=scipy.mean)
            group_bootstrap_result = scipy.stats.bootstrap(data=(group_results,), statistic=scipy.mean)
            text_score = "{:0.2f}".format(100*statistics.mean(text_results))\
                + " & [" + "{:0.2f}".format(100*text_bootstrap_result.confidence_interval.low)\
                + "," + "{:0.2f}".format(100*text_bootstrap_result.confidence_interval.high) + "]"
            image_score = "{:0.2f}".format(100*statistics.mean(image_results))\
                + " & [" + "{:0.2f}".format(100*image_bootstrap_result.confidence_interval.low)\
                + "," + "{:0.2f}".format(100*image_bootstrap_result.confidence_interval.high) + "]"
            group_score = "{:0.2f}".format(100*statistics.mean(group_results))\
                + " & [" + "{:0.2f}".format(100*group_bootstrap_result.confidence_interval.low)\
                + "," + "{:0.2f}".format(100*group_bootstrap_result.confidence_interval.high) + "]"
        else:
            text_score = 100*statistics.mean(text_results)
            image_score = 100*statistics.mean(image_results)
            group_score = 100*statistics.mean(group_results)
        table_dict["Model"].append(display_name)
        table_dict["Text"].append(text_score)
        table_dict["Image"].append(image_score)
        table_dict["Group"].append(group_score)

    return table_dict

def bolden_table_dict(table_dict):
    new_table_dict = table_dict.copy()
    new_text = []
    for item in table_dict["Text"]:
        if item > 25:
            new_text.append("\\textbf{" + f'{item:.2f}' + "}")
        else:
            new_text.append(f'{item:.2f}')
    new_table_dict["Text"] = new_text

    new_image = []
    for item in table_dict["Image"]:
        if item > 25:
            new_image.append("\\textbf{" + f'{item:.2f}' + "}")
        else:
            new_image.append(f'{item:.2f}')
    new_table_dict["Image"] = new_image

    new_group = []
    for item in table_dict["Group"]:
        if item > 16.67:
            new_group.append("\\textbf{" + f'{item:.2f}' + "}")
        else:
            new_group.append(f'{item:.2f}')
    new_table_dict["Group"] = new_group
    return new_table_dict
