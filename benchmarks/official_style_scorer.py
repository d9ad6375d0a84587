"""Score an NLVR2 prediction file the way the official `metrics.py` does: a standalone Python process that
reads the gold JSON lines and the prediction CSV into dicts and loops over them.

    python benchmarks/official_style_scorer.py GOLD.jsonl PREDICTIONS.csv

Prints accuracy and consistency (percent). benchmarks/serve.py times this as a subprocess, interpreter
start-up included, as the baseline an HTTP upload to Holdout is compared with. Standard library only.
"""

import json
import sys


def main(gold_path: str, predictions_path: str) -> None:
    predictions = {}
    with open(predictions_path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            identifier, prediction = line.split(",")[:2]
            predictions[identifier.strip()] = prediction.strip()

    examples = []
    with open(gold_path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                examples.append(json.loads(line))

    missing = [example["identifier"] for example in examples if example["identifier"] not in predictions]
    if missing:
        sys.exit(f"{len(missing)} examples have no prediction, e.g. {missing[0]}")

    correct = 0
    sentences = {}  # consistency: one group per sentence, i.e. the identifier without its pair id
    for example in examples:
        identifier = example["identifier"]
        right = predictions[identifier].lower() == str(example["label"]).lower()
        correct += right
        split, set_id, _pair_id, sentence_id = identifier.split("-")
        key = f"{split}-{set_id}-{sentence_id}"
        sentences[key] = sentences.get(key, True) and right

    accuracy = 100.0 * correct / len(examples)
    consistency = 100.0 * sum(sentences.values()) / len(sentences)
    print(f"accuracy {accuracy:.2f}")
    print(f"consistency {consistency:.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
