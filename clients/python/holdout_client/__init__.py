"""holdout-client: the `holdout` command for teams submitting to a Holdout leaderboard server."""

__version__ = "1.2.0"
