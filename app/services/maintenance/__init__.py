"""Maintenance: the maintainers' actions, each audited (`maintainer_actions`, used by the console and the
command line), label audits and corrected gold files (`label_audits`), backups and restore (`backups`) and
the demo (`demo`).

May import every other service package.
"""
