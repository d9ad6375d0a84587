# Official NLVR2 contrast-set evaluation script (allenai/contrast-sets, nlvr2/eval.py), made callable as a
# library for differential tests.
#
# Repository: https://github.com/allenai/contrast-sets
# Commit:     e2b87316ba7b30093bc9ffbc340e6550cab79f67 (HEAD, 2021-11-30); nlvr2/eval.py last changed in
#             a6fa87f439fbbbbb3a88c5b08dfa3727445bef29 (2020-04-04, "evaluate nlvr2 contrast set")
# Path:       nlvr2/eval.py (gold: nlvr2/contrast_set_nlvr2.jsonl, read from the working directory)
# Licence:    none stated in the repository (no LICENSE file).
#
# Changes made (and nothing else):
#   1. This header.
#   2. `if __name__ == '__main__':` -> `def main(argv=None, gold_path='contrast_set_nlvr2.jsonl'):`,
#      `parser.parse_args()` -> `parser.parse_args(argv)`.
#   3. `open('contrast_set_nlvr2.jsonl', 'rt')` -> `open(gold_path, 'rt')` (same default).
#   4. `return acc, consistency` after the two prints.

import argparse
import json
from collections import defaultdict


def main(argv=None, gold_path='contrast_set_nlvr2.jsonl'):  # harness change 2
    parser = argparse.ArgumentParser(
        description='Evaluation for NLVR2 contrast set')
    parser.add_argument('--prediction-path', help='Prediction path')
    args = parser.parse_args(argv)  # harness change 2

    # prediction file is expected to be a text file with separate line per prediction,
    # with identifier and prediction (as 0/1) separated by a comma.
    # e.g.
    # test1-769-1-0-1,1
    # test1-769-1-0-2,0
    # test1-256-2-0-1,0
    # test1-256-2-0-2,1

    lines = list(open(args.prediction_path, 'rt'))
    predictions = [line.split(',') for line in lines]
    pred_per_identifier = {identifier: pred.strip() for identifier, pred in predictions}

    n_total = 0
    n_correct = 0
    correct_per_group = defaultdict(list)

    for line in open(gold_path, 'rt'):  # harness change 3
        ex = json.loads(line)

        identifier = ex['identifier']
        group = ex['identifier'][:-2]
        gold_label = ex['label']
        correct = False

        n_total += 1

        if identifier in pred_per_identifier:
            pred = bool(pred_per_identifier[identifier])
            correct = pred == gold_label

            if correct:
                n_correct += 1
        else:
            # prediction not found
            pass

        correct_per_group[group].append(correct)

    acc = n_correct / n_total
    consistency = sum([all(g) for g in correct_per_group.values()]) / len(correct_per_group)
    print(f"Accuracy: {acc}")
    print(f"Consistency: {consistency}")
    return acc, consistency  # harness change 4
