"""`morphrt.render`'s keyword arguments: the signature Python shows, the
defaults, and what an unknown or mistyped keyword raises."""

import inspect

import numpy as np
import pytest

import morphrt

TONE = {
    "version": "1.0",
    "sample_rate": 48000,
    "nodes": [{"id": "osc", "op": "sine", "params": {"freq": "440Hz", "amp": 0.5}}],
    "outputs": {"main": ["osc"]},
}

KEYWORDS = {
    "duration": None, "input": None, "sample_rate": None, "profile": "strict",
    "seed": None, "block_size": None, "params": None, "events": None,
    "dtype": None, "resources": None, "threads": 1,
}


def test_render_shows_its_keywords_with_their_defaults():
    sig = inspect.signature(morphrt.render)
    params = list(sig.parameters.values())
    assert params[0].name == "scene"
    assert params[0].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
    shown = {p.name: p.default for p in params[1:]}
    assert {k: shown.get(k, "missing") for k in KEYWORDS} == KEYWORDS
    assert all(p.kind == inspect.Parameter.KEYWORD_ONLY for p in params[1:])


def test_every_keyword_given_its_default_renders_what_none_given_does():
    plain = morphrt.render(TONE, duration=0.01)
    spelt = morphrt.render(TONE, **dict(KEYWORDS, duration=0.01))
    assert plain.dtype == np.float64 and plain.shape == (1, 480)
    assert np.array_equal(plain, spelt)
    # Each keyword takes effect.
    assert morphrt.render(TONE, duration=0.01, sample_rate=24000).shape == (1, 240)
    assert morphrt.render(TONE, duration=0.01, profile="live").dtype == np.float32
    quiet = morphrt.render(TONE, duration=0.01, params={"osc.amp": 0.25})
    assert np.allclose(quiet * 2, plain)


def test_an_unknown_keyword_raises_naming_it():
    with pytest.raises(TypeError) as e:
        morphrt.render(TONE, duration=0.01, durtion=1)
    assert str(e.value) == "render() got an unexpected keyword argument 'durtion'"


@pytest.mark.parametrize("name,value,exc,words", [
    ("sample_rate", "fast", TypeError, "'str' object cannot be interpreted as an integer"),
    ("seed", -1, OverflowError, "can't convert negative int to unsigned"),
    ("block_size", 1.5, TypeError, "'float' object cannot be interpreted as an integer"),
    ("params", [1], TypeError, "'list' object is not an instance of 'dict'"),
    ("events", {}, TypeError, "'dict' object is not an instance of 'list'"),
    ("profile", None, TypeError, "'None' is not an instance of 'str'"),
    ("resources", "x", TypeError, "'str' object is not an instance of 'dict'"),
    ("threads", 1.5, TypeError, "'float' object cannot be interpreted as an integer"),
    ("threads", -1, OverflowError, "can't convert negative int to unsigned"),
])
def test_a_mistyped_keyword_raises_what_was_expected_noting_its_name(name, value, exc, words):
    with pytest.raises(exc) as e:
        morphrt.render(TONE, duration=0.01, **{name: value})
    assert str(e.value) == words
    assert e.value.__notes__ == [f"while processing '{name}'"]


def test_a_second_positional_argument_is_refused():
    with pytest.raises(TypeError, match="positional"):
        morphrt.render(TONE, 0.01)
