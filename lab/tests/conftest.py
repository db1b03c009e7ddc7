import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(LAB))

REPO = LAB.parent
DATA = Path(__file__).resolve().parent / "data"
