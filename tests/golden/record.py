"""Re-record the golden walk from the current code: `python -m tests.golden.record`.

Only when a change of behaviour is intended; the commit that re-records says which answers changed and why.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

from tests.golden import walk


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="holdout-golden-") as folder:
        answers = walk.walk(Path(folder))
    walk.save(answers)
    counts = Counter(answer.role for answer in answers)
    print(f"recorded {len(answers)} answers ({dict(counts)}) into {walk.RECORDING}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
