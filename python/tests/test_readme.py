"""The Python blocks of python/README.md run as written, in order, from
the top of the repository, and give what their comments say."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_python_blocks_run_as_written():
    text = (ROOT / "python" / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        scope = {}
        for b in blocks:
            exec(compile(b, "python/README.md", "exec"), scope)
    finally:
        os.chdir(here)
    assert scope["audio"].shape == (1, 96000) and str(scope["audio"].dtype) == "float64"
    assert scope["out"].shape == (2, 512) and str(scope["out"].dtype) == "float32"
    assert scope["wet"].shape == (2, 48000) and str(scope["wet"].dtype) == "float32"
