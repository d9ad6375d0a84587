"""`python -m holdout_client ...` is the `holdout` command."""

import sys

from holdout_client.cli import main

sys.exit(main())
