"""morphrt scenes rendered into numpy arrays, bit-exact under strict."""

import os
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

SceneLike = Union[str, "os.PathLike[str]", Mapping[str, Any], "Scene"]
Time = Union[float, str]
Audio = npt.NDArray[Union[np.float32, np.float64]]
Resources = Mapping[str, Union[Audio, tuple[Audio, int], str, "os.PathLike[str]"]]
"""`@resource:NAME` files by NAME: a float array (channels, frames) or
(frames,) at the scene's rate, an (array, sample_rate) tuple, or the path
of a WAV file."""

class SceneError(ValueError):
    """A scene that does not load or compile."""

    diagnostics: list[dict[str, Any]]
    """Each error and warning: severity, file, line, column, path (the JSON
    path), node, message, help."""

def render(
    scene: SceneLike,
    *,
    duration: Optional[Time] = None,
    input: Optional[Union[Audio, str, "os.PathLike[str]"]] = None,
    sample_rate: Optional[int] = None,
    profile: str = "strict",
    seed: Optional[int] = None,
    block_size: Optional[int] = None,
    params: Optional[Mapping[str, Union[float, str, bool]]] = None,
    events: Optional[Sequence[Mapping[str, Any]]] = None,
    dtype: Optional[npt.DTypeLike] = None,
    resources: Optional[Resources] = None,
    midi: Optional[Union[str, "os.PathLike[str]", bytes]] = None,
    threads: int = 1,
) -> npt.NDArray[Any]:
    """Renders `scene` and returns its main bus, shape (channels, frames):
    float64 under strict, float32 under repro and live, or `dtype`.

    `scene` is a path, a JSON string or a dict. `duration` is seconds or a
    time such as "2.5s", "480ms", "4bars"; without it, the scene's
    `duration`, else the input's length, else the MIDI file's last event.
    `input` is (channels, frames) or (frames,), float32 or float64, read
    by the scene's `input` nodes, or the path of an audio file of any
    format `morphrt render --input` reads, converted to the scene's rate
    as it converts it. `midi` is the path or the bytes of a standard MIDI
    file that plays the scene's MIDI controls as `morphrt render --midi`
    does.
    `params` sets node params before compiling ({"lp.cutoff": "900Hz"});
    `events` are added to the scene's events. `resources` supplies the
    scene's `@resource:` files. `threads` computes each block on that
    many threads (1 to 1024), the same bytes at every count. The GIL is
    released while the audio renders.
    """

def check(
    scene: SceneLike, *, profile: Optional[str] = None, resources: Optional[Resources] = None
) -> list[dict[str, Any]]:
    """Checks `scene` as `morphrt check` does: returns its warnings, raises
    SceneError on errors."""

class Scene:
    """A scene loaded from a path, a JSON string or a dict. Every function
    that takes a scene takes a Scene too."""

    def __init__(self, scene: SceneLike) -> None: ...
    @property
    def text(self) -> str:
        """The scene's JSON text."""
    @property
    def name(self) -> str:
        """The name diagnostics give it: its path, `<string>` or `<dict>`."""
    def check(
        self, *, profile: Optional[str] = None, resources: Optional[Resources] = None
    ) -> list[dict[str, Any]]:
        """As `morphrt.check`: the warnings; SceneError on errors."""
    def params(
        self, *, profile: Optional[str] = None, resources: Optional[Resources] = None
    ) -> list[dict[str, Any]]:
        """The params a host lists, in a stable order: `profile`, the
        scene's controls by source, then every node param as `node.param`.
        Each a dict: id, module, kind ("number", "integer", "choice",
        "toggle"), min, max, unit, default, display (the default in words)
        and, for a choice, choices."""

class Processor:
    """A scene streamed block by block: `process(block)` takes any number
    of frames and returns as many, `latency` frames behind; under strict
    the output is the offline render delayed by `latency`, bit for bit,
    however the calls are sliced. Params, notes and profile
    switches land at the first frame of the next `process` call. The GIL
    is released while audio is processed."""

    def __init__(
        self,
        scene: SceneLike,
        sample_rate: Optional[int] = None,
        block_size: Optional[int] = None,
        profile: str = "strict",
        *,
        seed: Optional[int] = None,
        max_frames: int = 4096,
        resources: Optional[Resources] = None,
    ) -> None:
        """Activates `scene` at `sample_rate` (default: the scene's) under
        `profile`, the engine running in blocks of `block_size` (default:
        the scene's, else the profile's); `process` calls are split into
        calls of at most `max_frames` to the engine's processor. A scene
        with errors raises SceneError."""
    def process(
        self, block: Union[Audio, int], *, dtype: Optional[npt.DTypeLike] = None
    ) -> npt.NDArray[Any]:
        """Processes `block`, (input_channels, frames) or (frames,) float32
        or float64, or a number of frames for a scene that reads no input;
        returns (output_channels, frames) of the block's dtype (a float64
        block is processed at the engine's precision, a float32 one in
        float32 buffers), for a number of frames float64 under strict and
        float32 otherwise, or `dtype`."""
    def set_param(self, id: str, value: Union[float, str]) -> None:
        """Sets param `id` (as Scene.params() lists it) to a number in its
        canonical unit or text it parses ("900Hz", "-6dB", "lowpass");
        `profile` switches the profile."""
    def note_on(self, key: int, velocity: float = 1.0, *, module: int = 0) -> None:
        """Starts MIDI note `key` (0…127) at `velocity` (0…1) in voice
        module `module`."""
    def note_off(self, key: int, *, module: int = 0) -> None:
        """Ends MIDI note `key` of voice module `module`."""
    def switch_profile(self, profile: str) -> None:
        """Switches the profile while the stream plays, every node's state
        carried; the following `process` calls hand over at a block
        boundary with a crossfade (`switching` is True until then)."""
    def snapshot(self) -> bytes:
        """Everything needed to continue from here: a morphrt snapshot file
        (JSON; `morphrt render --resume` reads it) with the block under way
        beside the engine state. Raises ValueError while a switch or its crossfade is under
        way, and when a param or note landed in the engine block under way
        (process to the next multiple of `latency` first)."""
    @staticmethod
    def resume(
        scene: SceneLike, snapshot: bytes, *, resources: Optional[Resources] = None
    ) -> "Processor":
        """A processor that continues from `snapshot` of the same scene:
        given the same input and events, its output from its first frame is
        what the snapshotted processor would have played next, bit for bit.
        Params and notes set in its first `latency` frames land at the end
        of them. A snapshot `morphrt render --snapshot-out` wrote plays
        `latency` frames of silence, then the render's continuation."""
    def reset(self) -> None:
        """Returns to the state at activation."""
    @property
    def latency(self) -> int:
        """Frames between an input (or event) and its output: one engine
        block."""
    @property
    def input_channels(self) -> int: ...
    @property
    def output_channels(self) -> int: ...
    @property
    def sample_rate(self) -> int: ...
    @property
    def profile(self) -> str:
        """The profile playing."""
    @property
    def switching(self) -> bool:
        """Whether a profile switch is under way."""
    @property
    def frames(self) -> int:
        """Frames processed since activation (or since the resume)."""
    @property
    def refused_events(self) -> int:
        """Events the engine did not take."""
