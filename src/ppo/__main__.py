"""``python -m ppo``: the same as the ``ppo`` console script."""

import sys

from ppo.cli import main

sys.exit(main())
