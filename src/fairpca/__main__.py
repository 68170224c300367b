"""``python -m fairpca``: the same as the ``fairpca`` console script."""

import sys

try:
    from fairpca.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line's modules load
    sys.stderr.write("\nfairpca: interrupted.\n")
    sys.exit(130)

sys.exit(main())
