"""
The reproduction of the paper's claims (docs/reproduction.md): what each campaign runs (campaigns), how it is
run resumably on one CPU core (runner), the rule that turns paired seeds into verdicts (verdicts, claims), and
the report drawn from the kept result files (draw_report). README.md beside this file has the commands.

Where things are: the runs (checkpoints, archives, logs) under runs/reproduction/, never committed; what the
report needs, small JSON files, under reproduction/results/<claim>/<run>/, committed, with the verdicts.json the
report draws from them; the report's pages and figures under docs/reproduction/.
"""

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
RUNS = REPOSITORY / "runs" / "reproduction"
RESULTS = REPOSITORY / "reproduction" / "results"
REPORT = REPOSITORY / "docs" / "reproduction"
