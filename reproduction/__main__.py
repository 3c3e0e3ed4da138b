"""`python -m reproduction CLAIM [--core N] [--runs PATTERN]`: runs a claim's campaign (see runner.py)."""

from reproduction.runner import main

main()
