"""Runs layout cases through the CuTe DSL (nvidia-cutlass-dsl) on the CPU: one JSON case per
line on stdin, ``{"k": 3, "op": "composition", "a": [shape, stride], "b": ...}``; for each
it prints ``S k``, then ``R k <layout>`` or ``E k <error type>: <message>``.  The layouts are
compile-time constants of a ``@cute.jit`` function, so the DSL computes the result while it
traces it, as it does for a kernel's static layouts."""

import json
import sys

import cutlass
import cutlass.cute as cute


def tup(x):
    return tuple(tup(e) for e in x) if isinstance(x, list) else x


@cute.jit
def run(op: cutlass.Constexpr, a: cutlass.Constexpr, b: cutlass.Constexpr):
    A = cute.make_layout(a[0], stride=a[1])
    if cutlass.const_expr(op == "composition"):
        print("RESULT", cute.composition(A, cute.make_layout(b[0], stride=b[1])))
    if cutlass.const_expr(op == "complement"):
        print("RESULT", cute.complement(A, b))
    if cutlass.const_expr(op == "right_inverse"):
        print("RESULT", cute.right_inverse(A))
    if cutlass.const_expr(op == "left_inverse"):
        print("RESULT", cute.left_inverse(A))
    if cutlass.const_expr(op == "coalesce"):
        print("RESULT", cute.coalesce(A))
    if cutlass.const_expr(op == "logical_divide"):
        print("RESULT", cute.logical_divide(A, cute.make_layout(b[0], stride=b[1])))
    if cutlass.const_expr(op == "logical_product"):
        print("RESULT", cute.logical_product(A, cute.make_layout(b[0], stride=b[1])))


class Capture:
    """stdout while one case traces: the DSL's print goes through Python's print."""

    def __init__(self):
        self.text = []

    def write(self, s):
        self.text.append(s)

    def flush(self):
        pass


def main():
    real = sys.stdout
    for line in sys.stdin:
        case = json.loads(line)
        k = case["k"]
        real.write(f"S {k}\n")
        real.flush()
        cap = Capture()
        sys.stdout = cap
        try:
            run(case["op"], tup(case["a"]), tup(case["b"]))
            err = None
        except Exception as e:  # noqa: BLE001 - the DSL's refusal is the answer
            err = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        finally:
            sys.stdout = real
        text = "".join(cap.text)
        if err is None and "RESULT " in text:
            real.write(f"R {k} {text.split('RESULT ', 1)[1].splitlines()[0].strip()}\n")
        else:
            real.write(f"E {k} {err or 'no result printed'}\n")
        real.flush()


if __name__ == "__main__":
    main()
