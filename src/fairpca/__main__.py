"""``python -m fairpca``: the same as the ``fairpca`` console script."""

import sys

from fairpca.cli import main

sys.exit(main())
