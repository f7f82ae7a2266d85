"""morphrt scenes rendered into numpy arrays, bit-exact under strict."""

import os
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

Scene = Union[str, "os.PathLike[str]", Mapping[str, Any]]
Time = Union[float, str]

class SceneError(ValueError):
    """A scene that does not load or compile."""

    diagnostics: list[dict[str, Any]]
    """Each error and warning: severity, file, line, column, path (the JSON
    path), node, message, help."""

def render(
    scene: Scene,
    *,
    duration: Optional[Time] = None,
    input: Optional[npt.NDArray[Union[np.float32, np.float64]]] = None,
    sample_rate: Optional[int] = None,
    profile: str = "strict",
    seed: Optional[int] = None,
    block_size: Optional[int] = None,
    params: Optional[Mapping[str, Union[float, str, bool]]] = None,
    events: Optional[Sequence[Mapping[str, Any]]] = None,
    dtype: Optional[npt.DTypeLike] = None,
) -> npt.NDArray[Any]:
    """Renders `scene` and returns its main bus, shape (channels, frames):
    float64 under strict, float32 under repro and live, or `dtype`.

    `scene` is a path, a JSON string or a dict. `duration` is seconds or a
    time such as "2.5s", "480ms", "4bars"; without it, the scene's
    `duration`, else the input's length. `input` is (channels, frames) or
    (frames,), float32 or float64, read by the scene's `input` nodes.
    `params` sets node params before compiling ({"lp.cutoff": "900Hz"});
    `events` are added to the scene's events. The GIL is released while
    the audio renders.
    """

def check(scene: Scene, *, profile: Optional[str] = None) -> list[dict[str, Any]]:
    """Checks `scene` as `morphrt check` does: returns its warnings, raises
    SceneError on errors."""
