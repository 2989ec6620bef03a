import sys

from yiji.cli import main

sys.exit(main())
