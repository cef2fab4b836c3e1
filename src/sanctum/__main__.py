"""``python -m sanctum``: the same as the ``sanctum`` console script."""

from sanctum.cli import main

raise SystemExit(main())
