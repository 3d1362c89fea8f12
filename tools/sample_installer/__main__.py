import sys

from tools.sample_installer.cli import main

sys.exit(main())
