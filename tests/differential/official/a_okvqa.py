# Official A-OKVQA evaluation code (allenai/aokvqa), made callable as a library for differential tests.
#
# Repository: https://github.com/allenai/aokvqa
# Commit:     83786de0b24c4fef0bfe39420684f6f73d9f3581 (HEAD, 2024-05-08); both files last changed in
#             42e8c44ff40d13cf272776a3197365f582137772 (2022-08-11, "Correction")
# Paths:      load_aokvqa.py (first part of this module), evaluation/eval_predictions.py (second part)
# Licence:    Apache License 2.0 (LICENSE of the repository)
#
# Changes made (and nothing else):
#   1. The two files are concatenated into this module, each introduced by a "# ---- <path> ----" line;
#      this header was added.
#   2. `from load_aokvqa import load_aokvqa` is commented out (the function is defined above in this module).
#   3. `if __name__ == '__main__':` -> `def main(argv=None):`, `parser.parse_args()` -> `parser.parse_args(argv)`,
#      and the function collects what it prints: `results = {}` before the loop, after each print
#      `results[prediction_file, 'MC'|'DA'] = mc_acc|da_acc`, and `return results` at the end.
# eval_aokvqa() is untouched. The code is Python 3 already.

# ---- load_aokvqa.py ----
import os
import json


def load_aokvqa(aokvqa_dir, split, version='v1p0'):
    assert split in ['train', 'val', 'test', 'test_w_ans']
    dataset = json.load(open(
        os.path.join(aokvqa_dir, f"aokvqa_{version}_{split}.json")
    ))
    return dataset

def get_coco_path(split, image_id, coco_dir):
    return os.path.join(coco_dir, f"{split}2017", f"{image_id:012}.jpg")


# ---- evaluation/eval_predictions.py ----
import argparse
import pathlib
import json
import glob

# from load_aokvqa import load_aokvqa  # harness change 2: defined above


def eval_aokvqa(dataset, preds, multiple_choice=False, strict=True):

    if isinstance(dataset, list):
        dataset = { dataset[i]['question_id'] : dataset[i] for i in range(len(dataset)) }

    if multiple_choice is False:
        dataset = {k:v for k,v in dataset.items() if v['difficult_direct_answer'] is False}

    if strict:
        dataset_qids = set(dataset.keys())
        preds_qids = set(preds.keys())
        assert dataset_qids.issubset(preds_qids)

    # dataset = q_id (str) : dataset element (dict)
    # preds = q_id (str) : prediction (str)

    acc = []

    for q in dataset.keys():
        if q not in preds.keys():
            acc.append(0.0)
            continue

        pred = preds[q]
        choices = dataset[q]['choices']
        direct_answers = dataset[q]['direct_answers']

        ## Multiple Choice setting
        if multiple_choice:
            if strict:
                assert pred in choices, 'Prediction must be a valid choice'
            correct_choice_idx = dataset[q]['correct_choice_idx']
            acc.append( float(pred == choices[correct_choice_idx]) )
        ## Direct Answer setting
        else:
            num_match = sum([pred == da for da in direct_answers])
            vqa_acc = min(1.0, num_match / 3.0)
            acc.append(vqa_acc)

    acc = sum(acc) / len(acc) * 100

    return acc


def main(argv=None):  # harness change 3
    parser = argparse.ArgumentParser()
    parser.add_argument('--aokvqa-dir', type=pathlib.Path, required=True, dest='aokvqa_dir')
    parser.add_argument('--split', type=str, choices=['train', 'val', 'test_w_ans'], required=True)
    parser.add_argument('--preds', type=str, required=True, dest='prediction_files')
    args = parser.parse_args(argv)  # harness change 3

    dataset = load_aokvqa(args.aokvqa_dir, args.split)

    results = {}  # harness change 3
    for prediction_file in glob.glob(args.prediction_files):
        predictions = json.load(open(prediction_file, 'r'))

        # Multiple choice

        mc_predictions = {}

        for q in predictions.keys():
            if 'multiple_choice' in predictions[q].keys():
                mc_predictions[q] = predictions[q]['multiple_choice']

        if mc_predictions != {}:
            mc_acc = eval_aokvqa(
                dataset,
                mc_predictions,
                multiple_choice=True,
                strict=False
            )
            print(prediction_file, 'MC', mc_acc)
            results[prediction_file, 'MC'] = mc_acc  # harness change 3

        # Direct Answer

        da_predictions = {}

        for q in predictions.keys():
            if 'direct_answer' in predictions[q].keys():
                da_predictions[q] = predictions[q]['direct_answer']

        if da_predictions != {}:
            da_acc = eval_aokvqa(
                dataset,
                da_predictions,
                multiple_choice=False,
                strict=False
            )
            print(prediction_file, 'DA', da_acc)
            results[prediction_file, 'DA'] = da_acc  # harness change 3

    return results  # harness change 3
