"""The dispatch registry (layoutproof.kinds): every kind of layout answers for itself.

* a kind of layout that a test module defines and registers works with the algebra's
  operations without any change to ops.py;
* an argument of a kind nobody registered gets a MalformedLayoutError naming the operation
  and the type (never an AttributeError or a TypeError);
* the core modules import nothing above themselves, at module level or inside functions.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from layoutproof import (
    ComposedLayout,
    Layout,
    MalformedLayoutError,
    Swizzle,
    coalesce,
    composition,
    flatten,
    kinds,
    left_inverse,
    logical_divide,
    right_inverse,
    symbols,
    tile_to_shape,
    zipped_divide,
)


class Shifted:
    """A new kind of layout: ``c -> base + inner(c)``, defined only here."""

    def __init__(self, base: int, inner: Layout) -> None:
        self.base = base
        self.inner = inner

    def __call__(self, c: int) -> int:
        return self.base + self.inner(c)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shifted) and (self.base, self.inner) == (other.base, other.inner)

    def __hash__(self) -> int:
        return hash((self.base, self.inner))


class SubShifted(Shifted):
    pass


@pytest.fixture
def shifted_kind():
    """Register Shifted's operations for the duration of a test."""

    def lifted(fn):
        return lambda s, *args: Shifted(s.base, fn(s.inner, *args))

    def compose(lhs, rhs):
        if isinstance(lhs, Shifted):  # (b + A) o B = b + (A o B)
            return Shifted(lhs.base, composition(lhs.inner, rhs))
        # A o (b + B): defined when A is linear (a single stride d): A(b) + (A o B)
        return Shifted(lhs(rhs.base), composition(lhs, rhs.inner))

    ops = {
        "coalesce": lifted(coalesce),
        "logical_divide": lifted(logical_divide),
        "zipped_divide": lifted(zipped_divide),
        "composition": compose,
    }
    for op, fn in ops.items():
        kinds.register(op, Shifted, fn)
    yield
    for op in ops:
        kinds.unregister(op, Shifted)


def test_a_registered_kind_works_without_touching_ops(shifted_kind):
    inner = Layout((2, (1, 6)), (1, (6, 2)))
    s = Shifted(100, inner)
    c = coalesce(s)
    assert isinstance(c, Shifted) and c.base == 100 and c.inner == coalesce(inner)
    assert [c(i) for i in range(12)] == [s(i) for i in range(12)]
    d = logical_divide(Shifted(5, Layout(16, 1)), Layout(4, 2))
    assert d == Shifted(5, logical_divide(Layout(16, 1), Layout(4, 2)))
    z = zipped_divide(Shifted(5, Layout((8, 6))), (4, 3))
    assert z == Shifted(5, zipped_divide(Layout((8, 6)), (4, 3)))


def test_binary_ops_dispatch_on_the_argument_that_is_not_a_plain_layout(shifted_kind):
    A = Layout(8, 3)
    # left: the kind answers
    left = composition(Shifted(7, A), Layout(4, 2))
    assert left == Shifted(7, composition(A, Layout(4, 2)))
    # right: the kind answers too, with both arguments in order
    right = composition(A, Shifted(1, Layout(2, 2)))
    assert isinstance(right, Shifted)
    assert [right(i) for i in range(2)] == [A(1 + Layout(2, 2)(i)) for i in range(2)]


def test_subclasses_inherit_their_base_class_implementation(shifted_kind):
    s = SubShifted(3, Layout((2, 2), (1, 2)))
    assert coalesce(s) == Shifted(3, Layout(4, 1))
    assert kinds.lookup("coalesce", SubShifted) is kinds.lookup("coalesce", Shifted)


def test_unregistering_removes_the_implementation(shifted_kind):
    kinds.unregister("coalesce", Shifted)
    with pytest.raises(MalformedLayoutError, match="coalesce.*Shifted"):
        coalesce(Shifted(0, Layout(4, 1)))


@pytest.mark.parametrize(
    "call, op",
    [
        (lambda x: coalesce(x), "coalesce"),
        (lambda x: composition(x, Layout(2, 1)), "composition"),
        (lambda x: logical_divide(x, Layout(2, 1)), "logical_divide"),
        (lambda x: zipped_divide(x, (2,)), "zipped_divide"),
        (lambda x: tile_to_shape(x, (4,)), "tile_to_shape"),
    ],
)
@pytest.mark.parametrize("arg", [3.5, "8:1", object(), Shifted(0, Layout(4, 1))])
def test_an_unregistered_kind_gets_the_typed_error(call, op, arg):
    with pytest.raises(MalformedLayoutError) as e:
        call(arg)
    msg = str(e.value)
    assert op in msg and type(arg).__name__ in msg


def test_inverses_of_an_unregistered_kind_are_typed_errors():
    for fn in (right_inverse, left_inverse):
        with pytest.raises(MalformedLayoutError):
            fn(Shifted(0, Layout(4, 1)))


def test_the_extensions_register_their_kinds():
    for op in ("coalesce", "composition", "logical_divide", "zipped_divide", "tile_to_shape"):
        assert kinds.lookup(op, ComposedLayout) is not None
        assert kinds.lookup(op, Swizzle) is not None
    assert kinds.lookup("right_inverse", ComposedLayout) is not None
    assert kinds.lookup("to_f2", Swizzle) is not None
    # the symbolic layer, under the marker, with the names the core calls
    for op in ("coalesce", "filter", "composition", "complement", "right_inverse", "left_inverse"):
        assert kinds.lookup(op, kinds.SYMBOLIC) is not None
    M = symbols("M")
    assert str(coalesce(Layout((M, 2), (1, M)))) == "2*M:1"


def test_call_symbolic_without_an_implementation_is_a_typed_error():
    with pytest.raises(MalformedLayoutError, match="no_such_op.*no symbolic implementation"):
        kinds.call_symbolic("no_such_op", 1)


def test_registration_arguments_are_checked():
    with pytest.raises(MalformedLayoutError):
        kinds.register("", Shifted, lambda x: x)
    with pytest.raises(MalformedLayoutError):
        kinds.register("coalesce", "not a class", lambda x: x)
    with pytest.raises(MalformedLayoutError):
        kinds.register("coalesce", Shifted, 42)
    with pytest.raises(MalformedLayoutError):
        kinds.register_hook("", print)
    assert kinds.lookup("coalesce", Shifted) is None


def test_hooks():
    assert kinds.hook("no such hook") is None
    prev = kinds.hook("parse_layout")
    assert prev is not None  # the notation module's parser
    seen = []
    kinds.register_hook("parse_layout", lambda text: seen.append(text) or Layout(4, 1))
    try:
        assert Layout.parse("anything") == Layout(4, 1) and seen == ["anything"]
    finally:
        kinds.register_hook("parse_layout", prev)
    assert Layout.parse("(4,2):(2,1)") == Layout((4, 2), (2, 1))


def test_the_free_accessors_ask_the_registry(shifted_kind):
    from layoutproof import cosize, depth, rank, shape, size

    s = Shifted(3, Layout((4, (2, 2)), (1, (4, 8))))
    with pytest.raises(MalformedLayoutError):
        size(s)  # no "size" registered: not a kind of layout yet
    for name in ("size", "cosize", "shape", "rank", "depth"):
        kinds.register(name, Shifted, lambda x, name=name: getattr(x.inner, name))
    try:
        assert (size(s), cosize(s), shape(s), rank(s), depth(s)) == (16, 16, (4, (2, 2)), 2, 2)
    finally:
        for name in ("size", "cosize", "shape", "rank", "depth"):
            kinds.unregister(name, Shifted)


def test_the_tuple_functions_take_layouts_through_the_registry():
    L = Layout((2, (3, 4)), (1, (2, 6)))
    assert flatten(L) == Layout((2, 3, 4), (1, 2, 6))
    assert flatten((2, (3, 4))) == (2, 3, 4)


# ----------------------------------------------------------------------------- layering
ROOT = pathlib.Path(__file__).resolve().parents[2] / "algebra"
# The algebra core, lowest first: each module may import only those before it.
CORE = ["errors", "kinds", "budget", "inttuple", "layout", "arith", "ops"]
ALLOWED_BELOW = {
    "errors": set(),
    "kinds": {"errors"},
    "budget": {"errors"},
    "inttuple": {"errors", "kinds"},
    "layout": {"errors", "kinds", "inttuple"},
    "arith": {"errors", "kinds", "inttuple", "layout"},
    "ops": {"errors", "kinds", "inttuple", "layout", "arith"},
}


def _package_imports(path: pathlib.Path):
    """Every import of a layoutproof module in the file, module level and inside functions:
    (line, the imported module relative to the package, e.g. 'ops' or 'symbolic.symops')."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                if node.module:
                    yield node.lineno, node.module
                else:  # from . import x
                    for a in node.names:
                        yield node.lineno, a.name
            elif node.level == 0 and node.module and node.module.startswith("layoutproof"):
                rest = node.module[len("layoutproof") :].lstrip(".")
                if rest:
                    yield node.lineno, rest
                else:
                    for a in node.names:
                        yield node.lineno, a.name
            elif node.level > 1:
                yield node.lineno, "<outside the package>"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("layoutproof"):
                    yield node.lineno, a.name[len("layoutproof") :].lstrip(".") or "<the facade>"


@pytest.mark.parametrize("mod", CORE)
def test_core_modules_import_no_extension(mod):
    bad = [
        f"{mod}.py:{line} imports {target}"
        for line, target in _package_imports(ROOT / f"{mod}.py")
        if target.split(".")[0] not in ALLOWED_BELOW[mod]
    ]
    assert not bad, "a core module imports a module above it:\n" + "\n".join(bad)


def test_the_layering_check_sees_function_level_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from .symbolic import symops\n    from . import swizzle\n")
    assert [t for _line, t in _package_imports(f)] == ["symbolic", "swizzle"]


def test_the_extensions_sit_above_the_core():
    # composed builds on swizzle, f2 on both; swizzle's only upward imports are the lazy
    # re-exports of the names that lived in it before the split
    assert {t for _l, t in _package_imports(ROOT / "composed.py")} <= set(CORE) | {"swizzle"}
    assert {t for _l, t in _package_imports(ROOT / "f2.py")} <= set(CORE) | {"swizzle", "composed"}
    up = {t for _l, t in _package_imports(ROOT / "swizzle.py")} - set(CORE)
    assert up == {"composed", "f2"}


# ----------------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize(
    "modname", ["layoutproof.swizzle", "layoutproof.composed", "layoutproof.f2", "layoutproof.kinds"]
)
def test_bad_argument_kinds_in_the_extension_modules(modname):
    """The split modules keep the promise test_soundness_concrete checks for the core: every
    public function, given garbage in any position, raises a LayoutError (or an arity
    TypeError), never AttributeError/TypeError/numpy errors from inside."""
    import importlib
    import itertools

    import test_soundness_concrete as sc

    from layoutproof import LayoutError

    mod = importlib.import_module(modname)
    skip = {"register", "unregister", "register_hook"}  # they would accept a callable garbage hook
    leaks = {}
    for name, f in sc._public(mod):
        if name in skip:
            continue
        for k in (1, 2, 3):
            for pos in range(k):
                for bad in sc._GARBAGE:
                    for fill in itertools.islice(itertools.product(sc._VALID, repeat=k - 1), 12):
                        args = list(fill)
                        args.insert(pos, bad)
                        try:
                            f(*args)
                        except LayoutError:
                            pass
                        except TypeError as e:
                            if "positional argument" not in str(e):
                                leaks.setdefault(name, f"{type(e).__name__}: {e}")
                        except Exception as e:  # noqa: BLE001 - the point of the test
                            leaks.setdefault(name, f"{type(e).__name__}: {e}")
    assert not leaks, leaks
