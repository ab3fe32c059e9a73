"""`python -m ops.soak --seed N --duration SECONDS`: one soak run, one JSON line on stdout."""

import sys

from ops.soak.runner import main

sys.exit(main(sys.argv[1:]))
