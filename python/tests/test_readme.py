"""The Python blocks of README.md and python/README.md run as written, in
order, from the top of the repository, and give what their comments
say."""

import contextlib
import io
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_blocks(path):
    """Runs the ```python blocks of `path` in one scope from the top of the
    repository; returns the scope and what they printed."""
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), re.S)
    assert blocks, path
    here = os.getcwd()
    os.chdir(ROOT)
    out = io.StringIO()
    try:
        scope = {}
        with contextlib.redirect_stdout(out):
            for b in blocks:
                exec(compile(b, str(path), "exec"), scope)
    finally:
        os.chdir(here)
    return scope, out.getvalue()


def test_the_top_readme_renders_in_three_lines_as_it_says():
    scope, printed = run_blocks(ROOT / "README.md")
    assert printed == "(1, 96000) float64\n"
    assert abs(scope["audio"]).max() > 0.01


def test_the_python_readme_blocks_run_as_written():
    scope, _ = run_blocks(ROOT / "python" / "README.md")
    assert scope["audio"].shape == (1, 96000) and str(scope["audio"].dtype) == "float64"
    assert scope["out"].shape == (2, 512) and str(scope["out"].dtype) == "float32"
    assert scope["wet"].shape == (2, 48000) and str(scope["wet"].dtype) == "float32"
    # The MIDI file plays the keys.
    assert scope["keys"].shape == (1, 96000) and abs(scope["keys"]).max() > 0.01
