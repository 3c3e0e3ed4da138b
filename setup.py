"""
The build's two steps that pyproject.toml cannot declare:

- the wheel carries `training_config/` (the configs and the sample corpus they train on) as
  `maelmo_plugin/training_config/`, so that an installed package trains from any directory (`maelmo train
  lm/pretrain_small ...`). In the repository the folder stays at the top, where the design and the README name
  it; `maelmo_declarations/packaged_configs.py` finds it in either place;
- `maelmo_plugin_startup.pth` at the top of site-packages, which runs `maelmo_startup.py` at interpreter
  start (quiet and offline `allennlp` commands; that module says why it must run that early). An editable
  install gets it from scripts/setup.sh.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

STARTUP_PTH = "maelmo_plugin_startup.pth"


class BuildPyWithConfigs(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable install reads the checkout's training_config/
            self.copy_tree(
                "training_config", os.path.join(self.build_lib, "maelmo_plugin", "training_config")
            )
            self.copy_file(STARTUP_PTH, os.path.join(self.build_lib, os.path.basename(STARTUP_PTH)))


setup(cmdclass={"build_py": BuildPyWithConfigs})
