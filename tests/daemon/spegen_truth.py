# SPDX-License-Identifier: GPL-2.0-or-later
"""The generator's ground truth, read once for the replay tests."""


def read_facts(path):
    """KEY=VALUE lines of a PREFIX.truth.txt, comments skipped."""
    facts = {}
    with open(path) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, v = line.rstrip("\n").split("=", 1)
                facts[k] = v
    return facts
