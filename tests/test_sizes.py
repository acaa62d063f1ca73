"""The size argument shared by every lab's make_inputs (labkit._sizes.resolve_size)."""
import pytest

from labkit import registry
from labkit._sizes import resolve_size

SIZES = {"small": {"a": 1, "b": 2}, "big": {"a": 10, "b": 20}}


def test_names_dicts_and_base():
    assert resolve_size("big", SIZES, ("a", "b")) == {"a": 10, "b": 20}
    got = resolve_size("big", SIZES, ("a", "b"))
    got["a"] = 0
    assert SIZES["big"]["a"] == 10                        # a copy, never the table itself
    assert resolve_size({"a": 5}, SIZES, ("a", "b")) == {"a": 5, "b": 2}
    assert resolve_size({"a": 5}, SIZES, ("a", "b"), base=None) == {"a": 5}


def test_errors_name_the_alternatives():
    with pytest.raises(ValueError, match=r"unknown size 'huge'.*\['big', 'small'\].*'a': …"):
        resolve_size("huge", SIZES, ("a", "b"))
    with pytest.raises(ValueError, match=r"unknown size keys \['c'\]; allowed: a, b"):
        resolve_size({"a": 1, "c": 2}, SIZES, ("a", "b"))
    with pytest.raises(TypeError, match="size must be a name"):
        resolve_size(3, SIZES, ("a", "b"))


@pytest.mark.parametrize("lab", registry.names())
def test_every_lab_rejects_a_misspelt_key(lab):
    mod = registry.load(lab)
    with pytest.raises(ValueError, match="unknown size keys"):
        mod.make_inputs({"sise": 3})
    with pytest.raises(ValueError, match="unknown size 'enormous'"):
        mod.make_inputs("enormous")
    with pytest.raises(TypeError, match="size must be a name"):
        mod.make_inputs(42)
