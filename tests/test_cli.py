"""The ``layoutproof`` command (the installed console script and ``python -m layoutproof``)
and the documentation's examples: docs/quickstart.md, docs/semantics.md and docs/verify.md
run as doctests, and the shell sessions of the quickstart and of docs/verify.md run for
real."""

from __future__ import annotations

import doctest
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _script() -> str:
    """The console script installed next to this interpreter (same venv)."""
    bindir = Path(sys.executable).parent
    found = shutil.which("layoutproof", path=str(bindir))
    if found is None:
        pytest.fail(
            f"the layoutproof console script is not installed in {bindir}; "
            "pip install the package (the README's test command does)"
        )
    return found


RUNNERS = {
    "script": lambda: [_script()],
    "python -m": lambda: [sys.executable, "-m", "layoutproof"],
}


@pytest.fixture(params=sorted(RUNNERS))
def cli(request):
    base = RUNNERS[request.param]()

    def run(*args: str, timeout: int = 60) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        return subprocess.run(
            base + list(args), capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
        )

    return run


# ----------------------------------------------------------------------------- eval
def test_eval_composition(cli):
    r = cli("eval", "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2))")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "(2,(2,2)):(2,(4,1))\n"
    assert r.stderr == ""


@pytest.mark.parametrize(
    "expr, out",
    [
        ("logical_divide(16:1, 4:2)", "(4,(2,2)):(2,(1,8))"),
        ("complement((2,4):(1,2), 16)", "2:8"),
        ("zipped_divide((8,6):(1,8), (4,3))", "((4,3),(2,2)):((1,8),(4,24))"),
        ("(4,(2,2)):(2,(1,8))(13)", "11"),
        ("(4,(2,2)):(2,(1,8))(1,(1,1))", "11"),
        ("coalesce((2,(1,6)):(1,(6,2)))", "12:1"),
        ("composition((12,8):(8,1), (4, _))", "(4,8):(8,1)"),
        ("right_inverse((4,2):(2,1))", "(2,4):(4,1)"),
        ("left_inverse(4:2)", "(2,4):(0,1)"),
    ],
)
def test_eval_more(cli, expr, out):
    r = cli("eval", expr)
    assert (r.returncode, r.stdout.strip(), r.stderr) == (0, out, "")


# ----------------------------------------------------------------------------- demo
def test_demo(cli):
    r = cli("demo")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2)) = (2,(2,2)):(2,(4,1))" in out
    assert "composition((6,2):(1,7), (3,2):(2,3))" in out
    assert re.search(r"rejected: .*disjoint.*witness coordinate 5\b", out), out
    assert r.stderr == ""


# ----------------------------------------------------------------------------- errors exit 2
@pytest.mark.parametrize(
    "expr, needle",
    [
        ("composition((6,2):(1,7), (3,2):(2,3))", "witness: 5"),  # inadmissible (Shah)
        ("composition((4,6):(1,5), 6:1)", "witness: 4"),  # shape divisibility
        ("complement((2,2):(1,3), 16)", "inadmissible (complement"),
        ("(2,3):(1,2,3)", "error: "),  # not congruent
        ("(0,2):(1,1)", "error: "),  # extent 0
        ("(4,2):(1,4)(9)", "error: "),  # out of domain
        ("nosuchfunction(8:1)", "error: "),  # unknown name
        ("(4,2):(1,4", "error: "),  # bad notation
    ],
)
def test_errors_exit_2(cli, expr, needle):
    r = cli("eval", expr)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [[], ["bogus"], ["eval"]])
def test_usage_errors_exit_2(cli, args):
    r = cli(*args)
    assert r.returncode == 2
    assert "usage: layoutproof" in r.stderr


def test_help_exits_0(cli):
    r = cli("--help")
    assert r.returncode == 0
    assert "eval" in r.stdout and "demo" in r.stdout


def test_help_loads_no_higher_layer_and_nothing_heavy():
    """The console script imports its sub-commands inside the functions that run them:
    ``layoutproof --help`` (and ``eval`` of an integer expression) load neither
    layoutproof.verify, .proofs nor .gpu, nor numpy, SymPy or Z3 -- that is what keeps the
    start-up fast."""
    code = (
        "import sys, contextlib, io\n"
        "from layoutproof.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    main(['eval', 'composition((4,2):(2,1), 8:1)'])\n"
        "heavy = ('layoutproof.verify', 'layoutproof.proofs', 'layoutproof.gpu', 'numpy', 'sympy', 'z3')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy[:3])))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout


# ----------------------------------------------------------------------------- check
@pytest.mark.parametrize(
    "args, code, needles",
    [
        (
            ["composition((M,N):(N,1), 4:1) == 4:N", "--assume", "M % 4 == 0"],
            0,
            ["proved (", "assuming: M % 4 == 0"],
        ),
        (["(4,2):(1,4) == 8:1"], 0, ["proved (exhaustive"]),
        (["(M,2):(2,1) == 2*M:1"], 1, ["refuted (z3", "coordinate 1 = (1,0): 2 != 1", "assignment: M = 2"]),
        (["composition((6,2):(1,7), (3,2):(2,3)) == (3,2):(2,3)"], 1, ["disjointness", "coordinate 5"]),
        # proved symbolically since the symbolic right_inverse; "checked (bounded" with the bounds before
        (
            ["right_inverse((M,N):(N,1)) == (N,M):(M,1)", "--bound", "4"],
            0,
            ["): right_inverse((M,N):(N,1)) =="],
        ),
        (["admissible composition((M,N):(N,1), 4:1)"], 3, ["unknown", "condition: (4 <= M) or (4 % M == 0)"]),
        (["admissible complement((2,2):(1,3), 16)"], 1, ["complement admissibility"]),
    ],
)
def test_check(cli, args, code, needles):
    r = cli("check", *args)
    assert r.returncode == code, (r.stdout, r.stderr)
    for n in needles:
        assert n in r.stdout, r.stdout
    assert r.stderr == ""


@pytest.mark.parametrize(
    "args", [["bogus"], ["x == 8:1"], ["(4,2):(1,4 == 8:1"], [], ["8:1 == 8:1", "--timeout", "0"]]
)
def test_check_errors_exit_2(cli, args):
    r = cli("check", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr


def test_help_lists_check(cli):
    r = cli("--help")
    assert "check" in r.stdout
    r = cli("check", "--help")
    assert r.returncode == 0 and "--assume" in r.stdout and "exit status" in r.stdout.lower()


# ----------------------------------------------------------------------------- the docs
FLAGS = doctest.ELLIPSIS


@pytest.mark.parametrize("name", ["quickstart.md", "semantics.md", "testing.md", "verify.md", "gpu.md"])
def test_docs_doctest(name):
    path = DOCS / name
    if not path.exists():
        pytest.fail(f"docs/{name} is missing")
    res = doctest.testfile(
        str(path), module_relative=False, optionflags=FLAGS, verbose=False, encoding="utf-8"
    )
    assert res.failed == 0, f"{res.failed} of {res.attempted} examples in docs/{name} failed"
    assert res.attempted >= 30, f"only {res.attempted} examples found in docs/{name}"


def _console_sessions(text: str):
    """(command, expected output) pairs from ```console blocks: a line ``$ cmd``, then
    the expected output up to the next ``$`` line or the end of the block."""
    for block in re.findall(r"^```console[ \t]*\n(.*?)^```", text, re.S | re.M):
        cmd, out = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if cmd is not None:
                    yield cmd, "\n".join(out)
                cmd, out = line[2:], []
            else:
                out.append(line)
        if cmd is not None:
            yield cmd, "\n".join(out)


QUICKSTART_SESSIONS = (
    list(_console_sessions((DOCS / "quickstart.md").read_text())) if (DOCS / "quickstart.md").exists() else []
)
VERIFY_SESSIONS = (
    list(_console_sessions((DOCS / "verify.md").read_text())) if (DOCS / "verify.md").exists() else []
)


def test_quickstart_has_shell_examples():
    assert len(QUICKSTART_SESSIONS) >= 5


@pytest.mark.parametrize(
    "cmd, expected",
    QUICKSTART_SESSIONS + VERIFY_SESSIONS,
    ids=[c for c, _ in QUICKSTART_SESSIONS + VERIFY_SESSIONS],
)
def test_quickstart_shell_examples(cmd, expected):
    argv = shlex.split(cmd)
    assert argv[0] == "layoutproof", cmd
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r = subprocess.run([_script()] + argv[1:], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    got = (r.stdout + r.stderr).rstrip("\n")
    checker = doctest.OutputChecker()
    assert checker.check_output(expected.rstrip("\n") + "\n", got + "\n", doctest.ELLIPSIS), (
        f"$ {cmd}\n--- expected\n{expected}\n--- got\n{got}"
    )


# ----------------------------------------------------------------------------- forms, flags
def _main(argv, capsys):
    from layoutproof.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_version(cli):
    import layoutproof

    r = cli("--version")
    assert (r.returncode, r.stdout.strip()) == (0, f"layoutproof {layoutproof.__version__}")


def test_help_texts(capsys):
    from layoutproof.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "main job" not in out
    assert re.search(r"gemm\s+generate a proven GEMM kernel \(Hopper wgmma", out), out
    from layoutproof.gpu.cli import main as gemm_main

    with pytest.raises(SystemExit):
        gemm_main(["--help"])
    out = capsys.readouterr().out
    assert "mma.sync GEMM" not in out and "wgmma" in out.split("options:")[0]
    for flag in ("--m M", "--n N", "--k K"):
        line = next(l for l in out.splitlines() if l.strip().startswith(flag))
        assert len(line.strip()) > len(flag) + 5, line  # has a help text


@pytest.mark.parametrize(
    "expr, out, note",
    [
        (
            "cute::Layout<cute::tuple<cute::C<4>, int>, cute::tuple<cute::C<1>, cute::C<4>>>",
            "(4,S0):(1,4)",
            "read as (4,S0):(1,4)",
        ),
        ("make_layout(make_shape(Int<4>{}, 8), make_stride(Int<8>{}, Int<1>{}))", "(4,8):(8,1)", "read as"),
        ('!cute.layout<"(4,8):(1,4)">', "(4,8):(1,4)", "read as"),
        ("composition((?{div=16},?):(1,?), 16:1)", "16:1", "assuming S0 % 16 == 0"),
        ("Sw<3,3,3> o _0 o (_8,_64):(_64,_1)", "Sw<3,3,3> o 0 o (8,64):(64,1)", "read as"),
        ('{"register": [[1], [2]], "lane": [[4]]}', "((2,2),2):((1,2),4)", "read as"),
    ],
)
def test_eval_reads_foreign_forms(expr, out, note, capsys):
    code, o, e = _main(["eval", expr], capsys)
    assert (code, o.strip()) == (0, out), e
    assert note in e


def test_eval_foreign_without_divisibility_is_undecided(capsys):
    code, o, e = _main(["eval", "composition((?,?):(1,?), 16:1)"], capsys)
    assert code == 2 and "16 <= S0 or S0 divides 16" in e and "Traceback" not in e


def test_check_reads_foreign_forms(capsys):
    from layoutproof.verify.cli import main

    assert main(["composition((?{div=16},?):(1,?), 16:1) == 16:1"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("proved") and "assuming S0 % 16 == 0" in err
    dsl = '!cute.composed_layout<"S<3,3,3> o 0 o (8,64):(64,1)">'
    assert main([f"Sw<3,3,3> o _0 o (_8,_64):(_64,_1) == {dsl}"]) == 0
    assert capsys.readouterr().out.startswith("proved")
    assert (
        main(
            [
                "cute::Layout<cute::tuple<cute::C<4>, cute::C<8>>, cute::tuple<cute::C<8>, cute::C<1>>> "
                "== (4,8):(1,4)"
            ]
        )
        == 1
    )


def test_check_warns_about_assumptions_on_absent_names(capsys):
    from layoutproof.verify.cli import main

    assert main(["coalesce((M,N):(1,M)) == M*N:1", "--assume", "K % 8 == 0", "--assume", "M % 2 == 0"]) == 0
    out, err = capsys.readouterr()
    assert "warning: --assume 'K % 8 == 0' names K" in err
    assert "M % 2" not in err
    assert out.startswith("proved")


def test_show_max_cells(capsys, tmp_path):
    code, _, err = _main(["show", "(1000,1000):(1,1000)", "--svg", str(tmp_path / "x.svg")], capsys)
    assert code == 2 and "1000000 cells, more than --max-cells 16384" in err
    assert not (tmp_path / "x.svg").exists()
    code, _, err = _main(["show", "(200,200):(1,200)"], capsys)  # the ASCII table too
    assert code == 2 and "--max-cells" in err
    code, out, _ = _main(["show", "(8,8):(1,8)", "--max-cells", "64"], capsys)
    assert code == 0 and out.startswith("(8,8):(1,8)")
    code, _, err = _main(["show", "(8,8):(1,8)", "--max-cells", "63"], capsys)
    assert code == 2
    code, _, err = _main(["show", "(16,8):(8,1)", "--tv", "(16,8)", "--max-cells", "100"], capsys)
    assert code == 2 and "--max-cells 100" in err
    code, _, err = _main(["show", "(4,4):(1,4)", "--max-cells", "-1"], capsys)
    assert code == 2 and "--max-cells must be >= 0" in err


def test_show_swizzled(capsys, tmp_path):
    from layoutproof import ComposedLayout, Layout, Swizzle
    from layoutproof.draw import layout_svg, layout_table

    C = ComposedLayout(Swizzle(2, 0, 2), 0, Layout((4, 4), (4, 1)))
    code, out, err = _main(["show", "make_composed_layout(Swizzle(2,0,2), 0, (4,4):(4,1))"], capsys)
    assert code == 0 and out == layout_table(C), err
    code, out, _ = _main(["show", "Sw<2,0,2> o _0 o (_4,_4):(_4,_1)", "--svg", "-"], capsys)
    assert code == 0 and out == layout_svg(C)
    code, _, err = _main(["show", "Sw<2,0,2> o _0 o (_4,_4):(_4,_1)", "--tv", "4x4"], capsys)
    assert code == 2 and "swizzled" in err


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--config", "128x128x32/2x2/4"], "--config is the mma.sync kernel's block"),
        (["--path", "mma.sync", "--sm90-config", "128x256/4"], "--sm90-config is the wgmma kernel's"),
        (["--emit", ""], "--emit needs a file name"),
        (["--reps", "-1"], "--reps must be >= 1"),
        (["--reps", "0"], "--reps must be >= 1"),
        (["--emit", "/missing-dir-h6/sub/k.cu"], "cannot write /missing-dir-h6/sub/k.cu: no directory"),
        (["--dtype", "s8", "--b-major", "n"], "--dtype s8: the tensor cores read K-major operands only"),
        (["--dtype", "e4m3", "--a-major", "m"], "--dtype e4m3: the tensor cores read K-major operands only"),
        (["--dtype", "tf32", "--path", "mma.sync"], "--dtype tf32 runs on the wgmma kernel"),
        (["--groups", "0"], "--groups must be in 1..1024, got 0"),
        (["--groups", "1025"], "--groups must be in 1..1024, got 1025"),
        (["--groups", "8", "--dtype", "e4m3"], "--groups runs the grouped wgmma kernel: --dtype f16 or bf16"),
        (["--groups", "8", "--a-major", "m"], "--groups runs the grouped wgmma kernel"),
        (["--groups", "8", "--path", "mma.sync"], "--groups runs the grouped wgmma kernel"),
        (["--groups", "8", "--activation", "gelu"], "--groups takes no --bias, --activation"),
        (["--groups", "8", "--out-dtype", "f32"], "--groups takes no --bias, --activation"),
    ],
)
def test_gemm_argument_errors_exit_2_before_proving(args, needle, capsys):
    from layoutproof.gpu.cli import main

    assert main(["--no-run"] + args) == 2
    out, err = capsys.readouterr()
    assert needle in err and "Traceback" not in err
    assert out == ""  # refused before generating (and proving) a kernel


def test_kit_extra_is_light():
    """``pip install 'layoutproof[kit]'`` gives the testing kit: hypothesis and pytest, none
    of the heavy test tools; and the kit's modules import without those tools."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = meta["project"]["optional-dependencies"]
    kit = {re.split(r"[<>=\[ ]", d)[0].lower() for d in extras["kit"]}
    assert {"hypothesis", "pytest"} <= kit
    assert not kit & {"cvc5", "mkdocs", "build", "cairosvg", "ruff", "nvidia-cutlass", "mkdocstrings"}
    code = (
        "import sys, importlib.abc\n"
        "HEAVY = {'cvc5', 'mkdocs', 'build', 'cairosvg', 'ruff', 'pycute', 'cupy', 'mkdocstrings'}\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in HEAVY:\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import layoutproof.verify.strategies, layoutproof.verify.theorem, layoutproof.verify.pytest_plugin\n"
        "from layoutproof.verify.strategies import layouts, sample\n"
        "assert len(sample(layouts(max_size=16), 3)) == 3\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_check_counterexample_sentence(capsys):
    """A refuted equality over a large domain names the coordinate once, in a
    sentence ("counterexample: coordinate 100000 = (0,1): 100000 != 500"), and the values it
    prints are the two layouts' values there.  Which coordinate is named depends on the path
    that decided it (Z3 within its time limit, else the bounded fallback): any is right."""
    from layoutproof import Layout
    from layoutproof.verify.cli import main

    A, B = "(100000,200):(1,100000)", "(200,100000):(100000,1)"
    assert main([f"{A} == {B}"]) == 1
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if "counterexample" in l)
    assert "same value at every coordinate at coordinate" not in line
    assert line.count("coordinate") == 1, line
    m = re.fullmatch(r"\s*counterexample: coordinate (\d+) = \(\d+,\d+\): (\d+) != (\d+)", line)
    assert m is not None, line
    i, a, b = (int(g) for g in m.groups())
    assert (Layout.parse(A)(i), Layout.parse(B)(i)) == (a, b) and a != b, line


def test_closed_stdout_gives_no_traceback():
    """``layoutproof eval ... | true``: the reader is gone before anything is written; no
    BrokenPipeError traceback (the pipe's read end is closed before the command starts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r, w = os.pipe()
    os.close(r)
    try:
        for argv in (["eval", "4:1"], ["show", "(4,4):(1,4)"], ["check", "8:1 == 8:1"]):
            res = subprocess.run(
                [_script()] + argv, stdout=w, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, timeout=60
            )
            assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr, (argv, res.stderr)
    finally:
        os.close(w)


@pytest.mark.parametrize(
    "path, hopper, shape",
    [
        ("wgmma", True, (512, 1024, 256)),
        ("wgmma", True, (4096, 4096, 256)),
        ("mma.sync", False, (512, 1024, 256)),
    ],
)
def test_gemm_default_config_is_what_gemm_runs(path, hopper, shape, tmp_path, capsys):
    """Without --config / --sm90-config the emitted kernel is the one layoutproof.gpu.gemm
    picks for the shape (rule.choose_config), not a fixed default."""
    from layoutproof.gpu.cli import main
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.rule import choose_config

    out = tmp_path / "k.cu"
    m, n, k = shape  # 4096x4096x256: the rule's ping-pong pick (rule.PINGPONG_RULE)
    argv = ["--no-run", "--path", path, "--m", str(m), "--n", str(n), "--k", str(k), "--emit", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    prob = GemmProblem("k", "n", "f16", None).validate()
    want = choose_config(m, n, k, prob, hopper=hopper, tma=hopper)
    first = text.splitlines()[0]
    assert f": {want.key()} " in first, text
    name = first.split()[1].rstrip(":")
    assert name in out.read_text()


def test_gemm_path_auto_emits_what_gemm_runs_on_hopper_decode_tiles_included(tmp_path, capsys):
    """``--path auto`` is gemm's path='auto': the decode rule's mma.sync tile for 32x4096x14336,
    the wgmma pick elsewhere; a --config or --sm90-config with it is refused by name."""
    from layoutproof.gpu.cli import main
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.rule import choose_config

    prob = GemmProblem("k", "n", "f16", None).validate()
    for m, n, k in [(32, 4096, 14336), (4096, 4096, 4096)]:
        out = tmp_path / "k.cu"
        argv = ["--no-run", "--path", "auto", "--m", str(m), "--n", str(n), "--k", str(k), "--emit", str(out)]
        assert main(argv) == 0
        first = capsys.readouterr().out.splitlines()[0]
        want = choose_config(m, n, k, prob, hopper=True, tma=True, mma=True)
        assert f": {want.key()} " in first and first.split()[1].rstrip(":") in out.read_text()
    assert "32x32x128_w2x2_s8" in choose_config(32, 4096, 14336, prob, hopper=True, tma=True, mma=True).key()
    assert main(["--no-run", "--path", "auto", "--config", "64x64x32/2x2/3"]) == 2
    assert "--path auto takes the rule's kernel" in capsys.readouterr().err


@pytest.mark.parametrize(
    "shape, major, fixup", [((16, 4096, 4096), "k", True), ((16, 8192, 8192), "m", False)]
)
def test_gemm_emits_the_split_kernels_where_the_rule_splits_k(shape, major, fixup, tmp_path, capsys):
    """A decode shape the wgmma rule splits along K: the split kernel (and, with the fix-up
    reduction, the fix-up kernel beside it, FILE_fixup.cu); the cluster reduction (an M-major
    A's decode split) is one kernel.  (These shapes used to end in an AttributeError.)"""
    from layoutproof.gpu.cli import main
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.rule import choose_config
    from layoutproof.gpu.kernels.splitk import SplitKConfig

    m, n, k = shape
    out = tmp_path / "k.cu"
    argv = ["--no-run", "--m", str(m), "--n", str(n), "--k", str(k), "--a-major", major, "--emit", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    want = choose_config(m, n, k, GemmProblem(major, "n", "f16", None).validate(), hopper=True, tma=True)
    assert isinstance(want, SplitKConfig) and (want.reduction == "kernel") == fixup
    assert f": {want.key()} " in text.splitlines()[0]
    assert text.splitlines()[0].split()[1].rstrip(":") in out.read_text()
    side = tmp_path / "k_fixup.cu"
    assert side.exists() == fixup and ("fix-up kernel lp_splitk_reduce" in text) == fixup
    if fixup:
        assert "lp_splitk_reduce" in side.read_text()


@pytest.mark.parametrize(
    "dtype, out_dtype, shape",
    [("e4m3", "bf16", (8192, 8192, 8192)), ("tf32", None, (2048, 7168, 4096)), ("s8", "f16", (100, 64, 64))],
)
def test_gemm_emits_the_typed_kernel_gemm_runs(dtype, out_dtype, shape, tmp_path, capsys):
    """``--dtype tf32|e4m3|e5m2|s8|u8`` emits and proves the kernel layoutproof.gpu.gemm runs
    for that type and shape (typed.decide_typed's pick, K-major operands by default)."""
    from layoutproof.gpu.cli import main
    from layoutproof.gpu.host.typed import decide_typed

    m, n, k = shape
    out = tmp_path / "k.cu"
    argv = ["--no-run", "--dtype", dtype, "--m", str(m), "--n", str(n), "--k", str(k), "--emit", str(out)]
    if out_dtype:
        argv += ["--out-dtype", out_dtype]
    assert main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    d = decide_typed(m, n, k, dtype, out_dtype, 132)
    assert f": {d.config.key()} {d.problem.key()}," in first, first
    assert first.split()[1].rstrip(":") in out.read_text()


def test_gemm_emits_the_ping_pong_kernel_when_asked(tmp_path, capsys):
    """``--sm90-config pp:BMxBN/STAGES`` is the ping-pong schedule; its tile rule refuses
    other tiles by name (exit 2, no traceback)."""
    from layoutproof.gpu.cli import main, parse_sm90_config

    cfg = parse_sm90_config("pp:64x256/5")
    assert (cfg.schedule, cfg.loader, cfg.bm, cfg.bn, cfg.stages) == ("pingpong", "tma", 64, 256, 5)
    out = tmp_path / "pp.cu"
    argv = ["--no-run", "--path", "wgmma", "--sm90-config", "pp:64x256/5", "--emit", str(out)]
    assert main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "sm90_64x256x64_s5_g8_tma_pp" in first and "lp_order" in out.read_text()
    assert main(["--no-run", "--path", "wgmma", "--sm90-config", "pp:128x256/4"]) == 2
    err = capsys.readouterr().err
    assert "bm=64" in err and "Traceback" not in err


def test_gemm_groups_emits_the_grouped_kernel_the_rule_picks(tmp_path, capsys):
    """``--groups G`` is the grouped (MoE) product: the rule's base for the shape (the
    ping-pong kernel for 1024 rows a group, the warp-specialized one for 128 rows a group at
    K = 4096), or the base ``--sm90-config`` names; a base the grouped kernel cannot take is
    refused by name (exit 2, no traceback)."""
    from layoutproof.gpu.cli import main

    out = tmp_path / "moe.cu"
    argv = "--no-run --groups 8 --m 8192 --n 14336 --k 4096 --dtype bf16 --emit".split() + [str(out)]
    assert main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "grouped8_ns_sm90_64x256x64_s5_g16_tma_pp" in first
    assert "lp_grid_rows(rtiles, gtab, G, grid_m);" in out.read_text()
    assert main("--no-run --groups 128 --m 16384 --n 1536 --k 4096".split()) == 0
    assert "grouped128_ns_sm90_128x256x64_s4_g8_tma_ws" in capsys.readouterr().out
    assert main("--no-run --groups 8 --sm90-config ws:128x256/4".split()) == 0
    assert "grouped8_ns_sm90_128x256x64_s4_g8_tma_ws" in capsys.readouterr().out
    assert main("--no-run --groups 8 --sm90-config cp:128x256/4".split()) == 2
    err = capsys.readouterr().err
    assert "GroupedConfig: the base must be the warp-specialized or ping-pong TMA kernel" in err
    assert "Traceback" not in err


def test_gemm_emits_and_picks_the_short_a_box(tmp_path, capsys):
    """``--sm90-config BMxBN/STAGESrROWS`` asks for A's TMA box of 16 or 32 rows; a larger
    ``--m`` or a tile the box cannot serve exits 2 by name.  Without a configuration an output
    of at most 32 rows gets the rule's short-box pick, its header carrying the host check."""
    from layoutproof.gpu.cli import main, parse_sm90_config
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.rule import choose_config

    cfg = parse_sm90_config("ws:64x64/8r16")
    assert (cfg.bm, cfg.bn, cfg.stages, cfg.a_rows) == (64, 64, 8, 16)
    assert parse_sm90_config("64x128/8 r32").a_rows == 32 and parse_sm90_config("64x128/8").a_rows == 64
    out = tmp_path / "k.cu"
    argv = "--no-run --m 16 --n 4096 --k 4096 --sm90-config 64x64/8r16 --emit".split() + [str(out)]
    assert main(argv) == 0
    assert "sm90_64x64x64_s8_g8_tma_ws_r16" in capsys.readouterr().out
    assert "host check" in out.read_text() and '"r"(bar), "r"(10240)' in out.read_text()
    for argv, words in (
        (["--m", "17", "--sm90-config", "64x64/8r16"], ("--m 17 must be at most 16",)),
        (["--m", "8", "--sm90-config", "128x256/4r16"], ("needs bm=64",)),
        (["--m", "8", "--sm90-config", "64x64/8r8"], ("must be one of",)),
        (["--m", "8", "--a-major", "m", "--sm90-config", "64x64/8r16"], ("a_major='m'",)),
    ):
        assert main(["--no-run", "--n", "4096", "--k", "4096"] + argv) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words) and "Traceback" not in err, err
    assert main(["--no-run", "--m", "24", "--n", "6144", "--k", "4096"]) == 0
    want = choose_config(24, 6144, 4096, GemmProblem("k", "n", "f16", None).validate(), hopper=True, tma=True)
    assert want.key().endswith("_r32") and f": {want.key()} " in capsys.readouterr().out


def test_gemm_emits_the_in_place_loads(tmp_path, capsys):
    """``--sm90-config cp:BMxBN/STAGESeOPS`` asks for the one-role kernel reading the named
    operands by two-byte loads (``Sm90Config.elem_loads``); on another schedule it exits 2 by
    name."""
    from layoutproof.gpu.cli import main, parse_sm90_config

    assert parse_sm90_config("cp:64x128/6ea").elem_loads == "a"
    assert parse_sm90_config("cp:64x128/6 e ab").elem_loads == "ab"
    assert parse_sm90_config("cp:64x128/6").elem_loads == ""
    out = tmp_path / "k.cu"
    argv = "--no-run --m 512 --n 512 --k 500 --sm90-config cp:64x128/6eb --emit".split() + [str(out)]
    assert main(argv) == 0
    assert "sm90_64x128x64_s6_g8_eb" in capsys.readouterr().out
    assert "lp_ld16_elems(" in out.read_text() and "B read by two-byte loads" in out.read_text()
    for cfg, words in (("64x128/6ea", ("loader='cp.async'",)), ("cp:64x128/6ec", ("expected",))):
        assert main(["--no-run", "--sm90-config", cfg]) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words) and "Traceback" not in err, err


def test_gemm_emits_the_staging_in_the_launch(tmp_path, capsys):
    """``--sm90-config BMxBN/STAGESsOPS`` asks for the warp-specialized kernel that copies the
    named operands into their padded buffers itself before a grid barrier
    (``Sm90Config.stage_in``); on another schedule it exits 2 by name."""
    from layoutproof.gpu.cli import main, parse_sm90_config

    assert parse_sm90_config("128x192/4sa").stage_in == "a"
    assert parse_sm90_config("ws:128x192/4 s ab").stage_in == "ab"
    assert parse_sm90_config("128x192/4").stage_in == ""
    out = tmp_path / "k.cu"
    argv = "--no-run --m 1000 --n 3000 --k 777 --sm90-config 128x192/4sa --emit".split() + [str(out)]
    assert main(argv) == 0
    assert "sm90_128x192x64_s4_g8_tma_ws_sia" in capsys.readouterr().out
    assert "lp_grid_sync(" in out.read_text() and "A staging read" in out.read_text()
    for cfg, words in (("pp:64x256/5sa", ("schedule='ws'",)), ("128x192/4sc", ("expected",))):
        assert main(["--no-run", "--sm90-config", cfg]) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words) and "Traceback" not in err, err


def test_gemm_emits_the_tiny_kernel(tmp_path, capsys):
    """``--path tiny`` emits the one-launch kernel of small products: the rule's pick
    (``tiny_config``) or ``--config KW/KU[nNI]``, with the fused epilogue; a wrong
    configuration, a wgmma configuration or another number type exits 2 by name."""
    from layoutproof.gpu.cli import main, parse_tiny_config
    from layoutproof.gpu.host.tiny import tiny_config

    assert parse_tiny_config("8/2n2") == parse_tiny_config(" 8 / 2 n 2 ")
    c = parse_tiny_config("16/4")
    assert (c.ni, c.kw, c.ku) == (1, 16, 4)
    out = tmp_path / "gemv.cu"
    assert main("--no-run --path tiny --m 1 --n 300 --k 700 --emit".split() + [str(out)]) == 0
    text = capsys.readouterr().out
    assert tiny_config(1, 300, 700, force=True).key() in text and "tiny16x8_kw16_ku4" in text
    assert "#pragma unroll 4\n  for (int kt = 0;" in out.read_text()
    argv = "--no-run --path tiny --m 7 --n 13 --k 17 --config 8/2n2 --bias m --activation gelu"
    assert main(argv.split()) == 0
    assert "tiny16x16_kw8_gelu_bf16m" in capsys.readouterr().out  # an f16 bias along m
    for argv, words in (
        ("--path tiny --config 3/4", ("kw=3",)),
        ("--path tiny --config 16", ("KW/KU",)),
        ("--path tiny --dtype e4m3", ("wgmma kernel", "--path tiny")),
        ("--path tiny --sm90-config 128x256/4", ("--path tiny", "--config")),
        ("--path wgmma --config 16/4", ("--path wgmma",)),
    ):
        assert main(["--no-run"] + argv.split()) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words) and "Traceback" not in err, err


@pytest.mark.parametrize(
    "argv, fixup",
    [
        (["--dtype", "bf16", "--bias", "n", "--activation", "gelu"], False),  # the fused ping-pong kernel
        (["--m", "8192", "--n", "8192", "--k", "256", "--activation", "silu"], False),  # no bias
        (
            [
                "--m",
                "1",
                "--n",
                "4096",
                "--k",
                "4096",
                "--bias",
                "n",
                "--activation",
                "silu",
                "--path",
                "auto",
            ],
            True,
        ),
        (
            [
                "--m",
                "16",
                "--n",
                "4096",
                "--k",
                "4096",
                "--bias",
                "m",
                "--bias-dtype",
                "f32",
                "--activation",
                "relu",
            ],
            True,
        ),
        (
            [
                "--path",
                "mma.sync",
                "--m",
                "512",
                "--n",
                "1024",
                "--k",
                "256",
                "--bias",
                "n",
                "--activation",
                "gelu",
            ],
            False,
        ),
        (["--sm90-config", "ws:128x256/4", "--bias", "n", "--bias-dtype", "bf16"], False),
    ],
    ids=["bf16-gelu", "silu-no-bias", "decode-fixup", "bias-along-m", "mma-sync", "given-config"],
)
def test_gemm_emits_the_fused_epilogue_gemm_runs(argv, fixup, tmp_path, capsys):
    """``--bias``/``--activation`` emit what ``gemm(a, b, bias=, activation=)`` runs for the
    shape (rule.decide on a 132-SM Hopper with TMA): the fused epilogue kernel, or the plain
    product's kernel with the epilogue moved into the fix-up kernel (FILE_fixup.cu beside it),
    each with the epilogue in its name and its proofs."""
    from layoutproof.gpu.cli import _parser, _request, main
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host import rule

    out = tmp_path / "k.cu"
    assert main(["--no-run", "--emit", str(out)] + argv) == 0
    text = capsys.readouterr().out
    args = _parser().parse_args(argv)
    prob = GemmProblem("k", "n", args.dtype, None).validate()
    req = _request(args, prob)
    given = None
    if args.sm90_config:
        from layoutproof.gpu.cli import parse_sm90_config

        given = parse_sm90_config(args.sm90_config)
    dev = rule.DeviceFacts("90" if args.path != "mma.sync" else "80", 132, args.path != "mma.sync")
    want = rule.decide(req, dev, given).config
    first = text.splitlines()[0]
    assert f": {want.key()} " in first, (first, want.key())
    act = args.activation
    assert (act == "none" or act in want.key()) and ("bias" in want.key())
    source = out.read_text()
    assert first.split()[1].rstrip(":") in source
    side = tmp_path / "k_fixup.cu"
    assert side.exists() == fixup, text
    if fixup:  # the epilogue is the fix-up kernel's: its activation is there
        assert f"lp_act_{act}" in side.read_text() and "fix-up kernel" in text
    else:
        assert act == "none" or f"lp_act_{act}" in source


def test_gemm_epilogue_argument_errors_exit_2(capsys):
    from layoutproof.gpu.cli import main

    assert main(["--no-run", "--bias-dtype", "f32"]) == 2
    assert "--bias-dtype needs --bias" in capsys.readouterr().err
    assert main(["--no-run", "--dtype", "f16", "--bias", "n", "--bias-dtype", "s32"]) == 2
    assert "--bias-dtype s32 is the integer products'" in capsys.readouterr().err
    # an exact s32 product takes no GELU: the typed rule's own error, named (exit 2)
    assert main(["--no-run", "--dtype", "s8", "--out-dtype", "s32", "--activation", "gelu"]) == 2
    err = capsys.readouterr().err
    assert "GemmInputError" in err and "integer function" in err and "Traceback" not in err
    with pytest.raises(SystemExit):  # argparse refuses an activation it does not know
        main(["--no-run", "--activation", "tanh"])


@pytest.mark.parametrize(
    "epi, want",
    [
        ({}, "torch.matmul"),
        ({"activation": "gelu"}, "torch.matmul + gelu"),
        ({"bias_along": "n", "activation": "silu"}, "torch.addmm + silu"),
        ({"bias_along": "m", "activation": "relu"}, "torch.addmm + relu"),
    ],
)
def test_gemm_run_times_torch_on_the_same_work(epi, want):
    """The GPU run's PyTorch peer (``_torch_peer``) computes what the fused call does -- the
    product, the bias along N or M, the activation -- on the same arrays through DLPack
    (checked here on CPU arrays against numpy)."""
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    from layoutproof.gpu.cli import _torch_peer

    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32)
    epi = dict(epi)
    ref = a.astype(np.float64) @ b
    if "bias_along" in epi:
        bias = rng.standard_normal(3 if epi["bias_along"] == "n" else 5).astype(np.float32)
        epi["bias"] = bias
        ref = ref + (bias[None, :] if epi["bias_along"] == "n" else bias[:, None])
    x = torch.from_numpy(ref)
    ref = {
        "gelu": torch.nn.functional.gelu,
        "silu": torch.nn.functional.silu,
        "relu": torch.relu,
    }.get(epi.get("activation", ""), lambda v: v)(x).numpy()
    name, call = _torch_peer(a, b, epi)
    assert name == want
    np.testing.assert_allclose(call().numpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "argv",
    [
        ["--dtype", "e4m3", "--out-dtype", "bf16", "--bias", "n", "--activation", "gelu"],
        ["--dtype", "s8", "--out-dtype", "s32", "--bias", "n", "--activation", "relu"],
        ["--dtype", "tf32", "--bias", "m", "--bias-dtype", "bf16", "--activation", "silu"],
    ],
    ids=["e4m3-gelu", "s8-s32-relu", "tf32-bias-m"],
)
def test_gemm_emits_the_typed_fused_epilogue_gemm_runs(argv, tmp_path, capsys):
    """The other number types fuse the bias and the activation as ``gemm`` does for them
    (typed.decide_typed's kernel, wrapped by typed.decide_typed_epilogue)."""
    from layoutproof.gpu.cli import _parser, main
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.typed import decide_typed, decide_typed_epilogue

    out = tmp_path / "k.cu"
    m = n = k = 2048
    assert main(["--no-run", "--m", str(m), "--n", str(n), "--k", str(k), "--emit", str(out)] + argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    args = _parser().parse_args(argv)
    d = decide_typed(m, n, k, args.dtype, args.out_dtype, 132)
    prob = GemmProblem("k", "k", args.dtype, args.out_dtype).validate()
    bdt = args.bias_dtype or ("s32" if prob.out == "s32" else "f32")
    want = decide_typed_epilogue(
        d.config, prob, activation=args.activation, bias_dtype=bdt, bias_along=args.bias
    )
    assert f": {want.config.key()} " in first, first
    assert f"lp_act_{args.activation}" in out.read_text()
