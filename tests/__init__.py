import os
from pathlib import Path

# Tests never reach a hub: a hub name must fail fast instead of hanging on the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import maelmo_plugin  # noqa: E402,F401  registers every "type" name, whichever test file runs alone

PROJECT_ROOT = Path(__file__).parent.parent
FIXTURES_ROOT = PROJECT_ROOT / "tests" / "fixtures"
