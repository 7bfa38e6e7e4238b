"""layoutproof: the CuTe layout algebra, sound and fast, with proofs.

>>> from layoutproof import Layout, composition
>>> A = Layout.parse("(4,(2,2)):(2,(1,8))")
>>> A(13), A(1, 3), A(1, (1, 1))
(11, 11, 11)
>>> str(composition(A, Layout((2, 4), (1, 2))))
'(2,(2,2)):(2,(4,1))'
"""

# notation and draw register the core's hooks (Layout.parse, the notebook pictures) on import
from . import draw, kinds, notation  # noqa: F401
from .analysis import (
    common_coarsening,
    common_refinement,
    coprofile,
    dice,
    domain_offset,
    downcast,
    greatest_common_domain,
    layout_add,
    max_common_layout,
    max_common_vector,
    nullspace,
    recast_layout,
    upcast,
)
from .arith import ArithTuple, E, ScaledBasis, make_basis_like, make_identity_layout
from .composed import ComposedLayout, make_composed_layout

# CUTLASS 2.x layout classes; registers the C++ reader's hook for their spellings (light: no
# numpy, SymPy or Z3 at import)
from .cutlass2 import Cutlass2Error, Cutlass2UnrepresentableError, cutlass2_factors, from_cutlass2
from .draw import (
    layout_svg,
    layout_table,
    layout_tikz,
    print_layout,
    print_tensor,
    print_tv_layout,
    tensor_svg,
    tensor_table,
    tv_layout_svg,
    tv_layout_table,
    tv_layout_tikz,
)
from .errors import (
    InadmissibleError,
    LayoutError,
    MalformedLayoutError,
    OutOfDomainError,
    UndecidableConditionError,
)
from .f2 import F2, F2Layout, from_f2, to_f2
from .inttuple import (
    append,
    ceil_div,
    congruent,
    crd2crd,
    crd2idx,
    flatten,
    group,
    idx2crd,
    inner_product,
    is_int,
    is_tuple,
    prefix_product,
    prepend,
    product,
    product_each,
    select,
    shape_div,
    take,
    unflatten,
    unwrap,
    weakly_congruent,
    wrap,
)
from .inttuple import (
    zip as zip,
)
from .layout import (
    Layout,
    LayoutLeft,
    LayoutRight,
    Underscore,
    _,
    coshape,
    cosize,
    depth,
    evenly_divides,
    get,
    make_layout,
    make_layout_like,
    make_ordered_layout,
    rank,
    shape,
    size,
    slice_,
    slice_and_offset,
    stride,
)
from .ops import (
    blocked_product,
    coalesce,
    compatible,
    complement,
    composition,
    flat_divide,
    flat_product,
    left_inverse,
    logical_divide,
    logical_product,
    raked_product,
    right_inverse,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from .ops import (
    filter as filter,
)
from .swizzle import Swizzle, make_swizzle
from .symbolic import assuming, assumptions, divides, symbols
from .symbolic import register as _symbolic_register  # noqa: F401 - registers the symbolic kind
from .tensor import (
    Tensor,
    clear,
    copy_if,
    fill,
    gemm,
    inner_partition,
    local_partition,
    local_tile,
    make_identity_tensor,
    make_tensor,
    outer_partition,
)
from .tensor import copy as copy

__version__ = "0.1.0"


# Code in and out (CuTe C++, CuTe DSL, Triton, pycute): imported on first use, so that
# ``import layoutproof`` stays light.
_LAZY = {
    n: "interop"
    for n in (
        "to_cpp",
        "to_dsl",
        "to_triton",
        "from_cpp",
        "from_dsl",
        "from_pycute",
        "from_triton",
        "import_layout",
    )
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'layoutproof' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


# `filter`, `zip` and `copy` (CuTe's names) are importable by name but left out of __all__,
# so that `from layoutproof import *` does not shadow Python's built-ins or stdlib modules.

__all__ = [
    "LayoutError",
    "MalformedLayoutError",
    "InadmissibleError",
    "OutOfDomainError",
    "UndecidableConditionError",
    "Cutlass2Error",
    "Cutlass2UnrepresentableError",
    "is_int",
    "is_tuple",
    "flatten",
    "unflatten",
    "product",
    "product_each",
    "prefix_product",
    "inner_product",
    "congruent",
    "weakly_congruent",
    "idx2crd",
    "crd2idx",
    "crd2crd",
    "select",
    "take",
    "group",
    "append",
    "prepend",
    "wrap",
    "unwrap",
    "shape_div",
    "ceil_div",
    "Layout",
    "Underscore",
    "_",
    "LayoutLeft",
    "LayoutRight",
    "make_layout",
    "make_ordered_layout",
    "make_layout_like",
    "size",
    "cosize",
    "coshape",
    "rank",
    "depth",
    "shape",
    "stride",
    "get",
    "slice_and_offset",
    "slice_",
    "evenly_divides",
    "coalesce",
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
    "compatible",
    "symbols",
    "assuming",
    "assumptions",
    "divides",
    "nullspace",
    "max_common_layout",
    "max_common_vector",
    "upcast",
    "downcast",
    "recast_layout",
    "layout_add",
    "greatest_common_domain",
    "common_refinement",
    "common_coarsening",
    "dice",
    "domain_offset",
    "coprofile",
    "ArithTuple",
    "ScaledBasis",
    "E",
    "make_basis_like",
    "make_identity_layout",
    "Tensor",
    "make_tensor",
    "make_identity_tensor",
    "local_tile",
    "local_partition",
    "inner_partition",
    "outer_partition",
    "gemm",
    "copy_if",
    "fill",
    "clear",
    "print_layout",
    "print_tv_layout",
    "print_tensor",
    "layout_svg",
    "tv_layout_svg",
    "tensor_svg",
    "layout_tikz",
    "tv_layout_tikz",
    "layout_table",
    "tv_layout_table",
    "tensor_table",
    "to_cpp",
    "to_dsl",
    "to_triton",
    "from_cpp",
    "from_dsl",
    "from_pycute",
    "from_triton",
    "import_layout",
    "from_cutlass2",
    "cutlass2_factors",
    "Swizzle",
    "make_swizzle",
    "ComposedLayout",
    "make_composed_layout",
    "F2",
    "F2Layout",
    "to_f2",
    "from_f2",
]
