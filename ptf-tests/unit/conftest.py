import sys
from pathlib import Path

# ptf_harness lives in ptf-tests/, which is not an installed package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
