"""pytest plugin: the ``slow`` marker, applied from a measured list.

pyproject.toml loads it for every run (``addopts = "-p slow_marks"``; ``tests/`` is on the
``pythonpath``).  Two ways to run the tests:

* ``python -m pytest -q`` -- everything (the README's command; CI runs exactly that);
* ``python -m pytest -q -m "not slow"`` -- the edit loop: the quick tests of every layer,
  under a minute on 2 cores.  Files whose every test is slow are not even imported then
  (their import costs time too: nvcc checks, catalogs, Z3).

A test is slow when it carries ``@pytest.mark.slow`` itself, when its file is in
:data:`SLOW_FILES`, or when its node id without its parameters is in :data:`SLOW_TESTS`
(every parametrization then).  The lists were measured on 2026-11-24 with
``--durations=0`` on the project's shared 2-core machine while other jobs ran (load ~10):
a test is listed when one of its parametrizations took 0.3 s or more there (roughly a tenth
of a second on a quiet machine) -- subprocess runs of the CLI, hypothesis sweeps, solver
calls, pictures; a file is listed whole when its tests are sweeps, builds (nvcc, the wheel,
mkdocs), mypy or pytest-in-pytest runs, or the catalog.  A new test is quick until measured
otherwise: re-measure with ``python -m pytest -q -m "not slow" --durations=20`` and add
what is slow here (tests/test_packaging.py checks that every entry names an existing test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: test files (relative to the repository root) whose every test is slow
SLOW_FILES: frozenset[str] = frozenset(
    {
        # hypothesis sweeps and fuzzing of the algebra
        "tests/algebra/test_differential_pycute.py",
        # explain's C++ checks compiled against the CuTe headers
        "tests/explain/test_explain_cpp.py",
        "tests/explain/test_explain_dsl.py",
        "tests/algebra/test_errors_fuzz.py",
        "tests/algebra/test_properties.py",
        # the GPU back end: nvcc builds, bank proofs, the pipeline model checker, GPU runs
        "tests/gpu/test_gpu_banks.py",
        "tests/gpu/test_gpu_codegen.py",
        "tests/gpu/test_gpu_epilogue.py",
        "tests/gpu/test_gpu_run.py",
        "tests/gpu/test_gpu_sm90.py",
        "tests/gpu/test_gpu_splitk.py",
        "tests/gpu/test_gpu_ws.py",
        # the theorem catalog and its symbolic execution
        "tests/proofs/test_proofs.py",
        "tests/proofs/test_symexec.py",
        # pytest-in-pytest, mypy
        "tests/verify/test_plugin.py",
        "tests/verify/test_typing.py",
        # the adversarial fuzz, the documentation site, every docstring example
        "tests/test_adversarial.py",
        "tests/test_docs_site.py",
        "tests/test_doctests.py",
    }
)

#: node ids (relative to the repository root) of slow tests in the other files; an id without
#: ``[...]`` covers every parametrization of the test
SLOW_TESTS: frozenset[str] = frozenset(
    {
        # tests/gpu/test_gpu_blockscale.py
        "tests/gpu/test_gpu_blockscale.py::test_blockscale_kernel_generates_with_every_proof",
        # tests/algebra/test_analysis.py
        "tests/algebra/test_analysis.py::test_bad_input_raises_layout_errors_only",
        "tests/algebra/test_analysis.py::test_common_coarsening_greatest",
        "tests/algebra/test_analysis.py::test_common_refinement_exists_iff",
        "tests/algebra/test_analysis.py::test_common_refinement_least",
        "tests/algebra/test_analysis.py::test_dice_is_the_complement_of_slice",
        "tests/algebra/test_analysis.py::test_domain_offset",
        "tests/algebra/test_analysis.py::test_downcast_post",
        "tests/algebra/test_analysis.py::test_greatest_common_domain_post",
        "tests/algebra/test_analysis.py::test_greatest_common_domain_same_size",
        "tests/algebra/test_analysis.py::test_layout_add_identity_and_double",
        "tests/algebra/test_analysis.py::test_layout_add_post",
        "tests/algebra/test_analysis.py::test_max_common_any_sizes",
        "tests/algebra/test_analysis.py::test_max_common_same_size",
        "tests/algebra/test_analysis.py::test_max_common_with_self_and_compact",
        "tests/algebra/test_analysis.py::test_nullspace_post",
        "tests/algebra/test_analysis.py::test_recast_layout_bits",
        "tests/algebra/test_analysis.py::test_upcast_post",
        # tests/algebra/test_arith.py
        "tests/algebra/test_arith.py::test_composition_agrees_with_compact_layout",
        "tests/algebra/test_arith.py::test_composition_postcondition",
        "tests/algebra/test_arith.py::test_divides_of_identity_are_bijections",
        "tests/algebra/test_arith.py::test_identity_hypothesis",
        "tests/algebra/test_arith.py::test_module_laws",
        # tests/algebra/test_budget.py
        "tests/algebra/test_budget.py::test_an_enclosing_deadline_wins",
        "tests/algebra/test_budget.py::test_deadline_restores_the_alarm_and_the_context",
        "tests/algebra/test_budget.py::test_hostile_postconditions_stop_at_their_deadline",
        # tests/algebra/test_cutlass2.py: one C++ program against the CUTLASS 2.x headers
        "tests/algebra/test_cutlass2.py::test_every_class_equals_the_headers_operator",
        # tests/algebra/test_draw.py
        "tests/algebra/test_draw.py::test_cli_show_errors_exit_2",
        "tests/algebra/test_draw.py::test_cli_show_files",
        "tests/algebra/test_draw.py::test_cli_show_png",
        "tests/algebra/test_draw.py::test_cli_show_usage",
        "tests/algebra/test_draw.py::test_drawing_libraries_are_imported_lazily",
        "tests/algebra/test_draw.py::test_png_cells_have_the_thread_colors",
        "tests/algebra/test_draw.py::test_print_layout_prints_in_a_script",
        "tests/algebra/test_draw.py::test_property_ascii_svg_tikz_match_evaluation",
        "tests/algebra/test_draw.py::test_property_tv_table_inverts",
        "tests/algebra/test_draw.py::test_swizzled_layouts_are_drawn",
        "tests/algebra/test_draw.py::test_swizzled_tensor_is_drawn",
        # tests/algebra/test_interop.py
        "tests/algebra/test_interop.py::test_cpp_dsl_round_trip_property",
        "tests/algebra/test_interop.py::test_cpp_print_form_round_trip_property",
        "tests/algebra/test_interop.py::test_dsl_divisibility_is_an_assumption_the_algebra_uses",
        "tests/algebra/test_interop.py::test_pycute_round_trip",
        "tests/algebra/test_interop.py::test_triton_round_trip_property",
        # tests/algebra/test_inttuple.py
        "tests/algebra/test_inttuple.py::test_ceil_div_definition",
        "tests/algebra/test_inttuple.py::test_crd2crd_between_compatible_shapes",
        "tests/algebra/test_inttuple.py::test_equality_hash_consistency",
        "tests/algebra/test_inttuple.py::test_flatten_unflatten_round_trip",
        "tests/algebra/test_inttuple.py::test_idx2crd_crd2idx_round_trip",
        "tests/algebra/test_inttuple.py::test_idx2crd_of_a_mode_coordinate_is_mode_by_mode",
        "tests/algebra/test_inttuple.py::test_layout_right_is_reversed_colex",
        "tests/algebra/test_inttuple.py::test_make_layout_like",
        "tests/algebra/test_inttuple.py::test_make_ordered_layout",
        "tests/algebra/test_inttuple.py::test_prefix_product_definition",
        "tests/algebra/test_inttuple.py::test_size_cosize_rank_depth",
        "tests/algebra/test_inttuple.py::test_str_parse_and_repr_round_trip",
        # tests/algebra/test_left_inverse_exact.py
        "tests/algebra/test_left_inverse_exact.py::test_enumerated_layouts_imply_success",
        "tests/algebra/test_left_inverse_exact.py::test_every_small_layout_rank_1_2",
        "tests/algebra/test_left_inverse_exact.py::test_every_small_layout_rank_3",
        "tests/algebra/test_left_inverse_exact.py::test_large_layouts_are_searched_without_recursion",
        # tests/algebra/test_parity_cute.py
        "tests/algebra/test_parity_cute.py::test_inverses_of_swizzled_layouts_random",
        # tests/algebra/test_soundness_concrete.py
        "tests/algebra/test_soundness_concrete.py::test_bad_argument_kinds_give_layout_errors",
        "tests/algebra/test_soundness_concrete.py::test_layout_o_swizzle_sweep",
        "tests/algebra/test_soundness_concrete.py::test_no_assert_statements_in_the_concrete_modules",
        "tests/algebra/test_soundness_concrete.py::test_python_O_gives_the_same_typed_errors",
        # tests/algebra/test_swizzle.py
        "tests/algebra/test_swizzle.py::test_composed_eval_is_a_of_offset_plus_b",
        "tests/algebra/test_swizzle.py::test_composed_modes_and_slices",
        "tests/algebra/test_swizzle.py::test_differential_pycute_composed",
        "tests/algebra/test_swizzle.py::test_f2_conversion_sound_or_raises",
        "tests/algebra/test_swizzle.py::test_f2_layout_eval",
        "tests/algebra/test_swizzle.py::test_f2_roundtrip_composed",
        "tests/algebra/test_swizzle.py::test_garbage_gives_layout_errors_only",
        "tests/algebra/test_swizzle.py::test_layout_after_composed",
        "tests/algebra/test_swizzle.py::test_layout_after_swizzle",
        "tests/algebra/test_swizzle.py::test_lifted_operations",
        "tests/algebra/test_swizzle.py::test_swizzle_any_int",
        "tests/algebra/test_swizzle.py::test_swizzle_composition_with_swizzle_exhaustive",
        "tests/algebra/test_swizzle.py::test_t12_swizzle_of_bijection_is_bijection",
        # tests/algebra/test_tensor.py
        "tests/algebra/test_tensor.py::test_copy_matches_the_loop",
        "tests/algebra/test_tensor.py::test_garbage_raises_layout_errors_only",
        "tests/algebra/test_tensor.py::test_gemm_hypothesis",
        "tests/algebra/test_tensor.py::test_local_partition_seed_example_every_element_once",
        # tests/gpu/test_gpu_atoms.py
        "tests/gpu/test_gpu_atoms.py::test_coord_matches_ptx_pointwise",
        # tests/gpu/test_gpu_ir.py
        "tests/gpu/test_gpu_ir.py::test_an_address_not_multilinear_in_a_runtime_value_is_refused",
        "tests/gpu/test_gpu_ir.py::test_an_unclaimed_memory_access_is_refused",
        "tests/gpu/test_gpu_ir.py::test_header_states_full_coverage",
        "tests/gpu/test_gpu_ir.py::test_planted_barrier_under_a_thread_condition",
        "tests/gpu/test_gpu_ir.py::test_planted_missing_arrive",
        "tests/gpu/test_gpu_ir.py::test_planted_off_by_one_guard",
        "tests/gpu/test_gpu_ir.py::test_planted_off_by_one_loop_bound",
        "tests/gpu/test_gpu_ir.py::test_planted_swapped_call_arguments",
        "tests/gpu/test_gpu_ir.py::test_planted_wrong_address_term",
        "tests/gpu/test_gpu_ir.py::test_planted_wrong_wait_parity",
        # tests/gpu/test_gpu_lower.py
        "tests/gpu/test_gpu_lower.py::test_c_evaluator_against_gcc",
        "tests/gpu/test_gpu_lower.py::test_lower_examples",
        "tests/gpu/test_gpu_lower.py::test_property_lower_is_proven_or_refused",
        "tests/gpu/test_gpu_lower.py::test_property_swizzled",
        "tests/gpu/test_gpu_lower.py::test_property_tampered_expression_is_refuted",
        "tests/gpu/test_gpu_lower.py::test_symbolic_ld",
        "tests/gpu/test_gpu_lower.py::test_symbolic_strides_coalesce_by_identity_and_print_as_written",
        # tests/gpu/test_gpu_plan.py
        "tests/gpu/test_gpu_plan.py::test_fake_plan_column_major_output_swaps_the_operands",
        "tests/gpu/test_gpu_plan.py::test_fake_plan_mma_sync_path_and_explicit_configs",
        "tests/gpu/test_gpu_plan.py::test_fake_plan_packs_the_kernels_own_signature",
        # tests/gpu/test_gpu_tiled.py
        "tests/gpu/test_gpu_tiled.py::test_C_tv_matches_ptx",
        "tests/gpu/test_gpu_tiled.py::test_partition_C_threads_tile_the_matrix",
        # tests/proofs/test_mutation_kills.py
        "tests/proofs/test_mutation_kills.py::test_composed_layout_cosize_is_the_exact_extent_of_its_values",
        "tests/proofs/test_mutation_kills.py::test_undecided_stride_order_is_reported_as_the_order",
        # tests/symbolic/test_solver.py
        "tests/symbolic/test_solver.py::test_translation_keeps_python_integer_semantics",
        # tests/symbolic/test_symbolic.py
        "tests/symbolic/test_symbolic.py::test_an_undecidable_condition_is_named",
        "tests/symbolic/test_symbolic.py::test_complement_needs_to_know_ignored_modes",
        "tests/symbolic/test_symbolic.py::test_expr_is_the_layout_function",
        "tests/symbolic/test_symbolic.py::test_fuzz_public_api_with_symbolic_arguments",
        "tests/symbolic/test_symbolic.py::test_stride_divisibility_needs_an_assumption",
        "tests/symbolic/test_symbolic.py::test_symbolic_result_agrees_with_every_substitution",
        "tests/symbolic/test_symbolic.py::test_symbolic_routines_agree_with_the_integer_routines",
        # tests/test_cli.py
        "tests/explain/test_explain_cli.py::test_emit_and_assume",
        "tests/explain/test_explain_cli.py::test_refusal_text_exit_1",
        "tests/explain/test_explain_cli.py::test_bad_input_exit_2",
        "tests/explain/test_explain_refusals.py::test_every_refusal_is_explained",
        "tests/explain/test_explain_refusals.py::test_undecided_models_and_weakest_assumption",
        "tests/explain/test_explain_refusals.py::test_docs_page_examples",
        "tests/explain/test_explain_refusals.py::test_foreign_notation_is_read",
        "tests/explain/test_explain_refusals.py::test_svg_marks_the_witness",
        "tests/explain/test_explain_refusals.py::test_render_cpp_static_and_dynamic",
        "tests/explain/test_explain_refusals.py::test_python_guard_separates_the_models",
        "tests/explain/test_explain_refusals.py::test_assume_makes_it_admissible_and_is_emitted",
        "tests/test_cli.py::test_check",
        "tests/test_cli.py::test_check_errors_exit_2",
        "tests/test_cli.py::test_check_warns_about_assumptions_on_absent_names",
        "tests/test_cli.py::test_closed_stdout_gives_no_traceback",
        "tests/test_cli.py::test_demo",
        "tests/test_cli.py::test_docs_doctest",
        "tests/test_cli.py::test_errors_exit_2",
        "tests/test_cli.py::test_eval_foreign_without_divisibility_is_undecided",
        "tests/test_cli.py::test_eval_more",
        "tests/test_cli.py::test_gemm_default_config_is_what_gemm_runs",
        "tests/test_cli.py::test_help_lists_check",
        "tests/test_cli.py::test_help_loads_no_higher_layer_and_nothing_heavy",
        "tests/test_cli.py::test_kit_extra_is_light",
        "tests/test_cli.py::test_quickstart_shell_examples",
        "tests/test_cli.py::test_version",
        # tests/test_layers.py
        "tests/test_layers.py::test_a_planted_tree_without_the_import_is_judged_like_the_package",
        "tests/test_layers.py::test_an_upward_import_breaks_the_contract",
        "tests/test_layers.py::test_every_contract_is_checked",
        "tests/test_layers.py::test_only_the_command_line_imports_a_command_module",
        # (test_the_import_contract_holds_on_the_package stays in the edit loop on purpose:
        # one import-linter run, about half a second)
        # tests/test_packaging.py
        "tests/test_packaging.py::test_demo_runs_under_OO",
        "tests/test_packaging.py::test_import_time_median_under_150ms",
        "tests/test_packaging.py::test_malformed_input_raises_under_optimize",
        "tests/test_packaging.py::test_no_bare_assert_in_the_library",
        "tests/test_packaging.py::test_numpy_only_when_needed",
        "tests/test_packaging.py::test_test_dependencies_are_declared",
        # tests/verify/test_strategies.py
        "tests/verify/test_strategies.py::test_bijective_layouts_are_bijections_onto_0_size",
        "tests/verify/test_strategies.py::test_compact_layouts_column_and_row_major",
        "tests/verify/test_strategies.py::test_compact_layouts_fill_0_to_size",
        "tests/verify/test_strategies.py::test_complement_pairs_are_admissible",
        "tests/verify/test_strategies.py::test_complement_pairs_cotarget_kinds",
        "tests/verify/test_strategies.py::test_composition_pairs_are_admissible_and_meet_the_postcondition",
        "tests/verify/test_strategies.py::test_composition_pairs_inside_a",
        "tests/verify/test_strategies.py::test_general_tilers_are_well_formed",
        "tests/verify/test_strategies.py::test_injective_layouts_are_injective_by_brute_force",
        "tests/verify/test_strategies.py::test_layouts_are_valid",
        "tests/verify/test_strategies.py::test_sample_is_reproducible",
        "tests/verify/test_strategies.py::test_shapes_respect_their_bounds",
        "tests/verify/test_strategies.py::test_strides_are_congruent_and_of_their_kind",
        "tests/verify/test_strategies.py::test_swizzled_layouts_any",
        "tests/verify/test_strategies.py::test_swizzled_layouts_are_bijections",
        "tests/verify/test_strategies.py::test_swizzles_are_valid",
        "tests/verify/test_strategies.py::test_symbolic_layouts_are_meaningful_under_their_assumptions",
        "tests/verify/test_strategies.py::test_tilers_are_admissible_for_the_divides",
        "tests/verify/test_strategies.py::test_tilers_of_each_kind",
        # tests/verify/test_verify.py
        "tests/verify/test_verify.py::test_check_command_verdicts_and_exit_status",
        "tests/verify/test_verify.py::test_equal_concrete_matches_brute_force",
        "tests/verify/test_verify.py::test_identity_bounded_box_follows_congruences_and_cap",
        "tests/verify/test_verify.py::test_identity_bounded_fallback",
        "tests/verify/test_verify.py::test_identity_composition_under_an_assumption",
        "tests/verify/test_verify.py::test_identity_divides_and_complement_examples",
        "tests/verify/test_verify.py::test_postcondition_agrees_with_a_naive_oracle",
        "tests/verify/test_verify.py::test_postcondition_holds_on_every_admissible_result",
        "tests/verify/test_post_upcast.py::test_every_upcast_meets_its_postcondition",
        "tests/verify/test_result_render.py::test_result_renders_its_assumptions",
        "tests/verify/test_result_render.py::test_check_result_and_cli_emit",
        "tests/verify/test_verify.py::test_postcondition_refutes_perturbed_results",
        "tests/verify/test_verify.py::test_postcondition_symbolic_composition_complement_inverses",
        "tests/verify/test_verify.py::test_postcondition_symbolic_divides",
        "tests/verify/test_verify.py::test_timeout_gives_unknown_never_proved",
        "tests/verify/test_verify.py::test_verify_docstring_examples",
        # tests/verify/test_verify_smt.py
        "tests/verify/test_verify_smt.py::test_cvc5_agrees_with_z3",
        # tests/verify/test_verify_soundness.py
        "tests/verify/test_verify_soundness.py::test_a_condition_that_matters_is_still_asked",
        "tests/verify/test_verify_soundness.py::test_an_unconfirmed_inadmissible_error_is_undecidable",
        "tests/verify/test_verify_soundness.py::test_either_branch_for_composite_operations",
        "tests/verify/test_verify_soundness.py::test_python_dash_o_gives_the_same_typed_errors",
        "tests/verify/test_verify_soundness.py::test_symbolic_operations_against_the_concrete_referee",
        "tests/verify/test_verify_soundness.py::test_verify_equal_against_the_concrete_referee",
    }
)


def _excludes_slow(config: pytest.Config) -> bool:
    """Does the run's ``-m`` expression deselect a test marked slow (and nothing else)?"""
    expr = config.getoption("markexpr", "") or ""
    if not expr.strip():
        return False
    try:
        from _pytest.mark.expression import Expression

        return not Expression.compile(expr).evaluate(lambda name, **kwargs: name == "slow")
    except Exception:  # an expression pytest itself will report, or a changed private API
        return expr.replace(" ", "") == "notslow"


def _rel(path: Any) -> str:
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m "not slow"``, a file whose every test is slow is not collected at all."""
    if _rel(collection_path) in SLOW_FILES and _excludes_slow(config):
        return True
    return None


def is_slow(nodeid: str) -> bool:
    """Is the test with this node id (relative to the repository root) in the slow lists?"""
    path = nodeid.split("::", 1)[0]
    return path in SLOW_FILES or nodeid in SLOW_TESTS or nodeid.split("[", 1)[0] in SLOW_TESTS


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection looks at the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:  # node ids are relative to the root directory, the repository's
        if is_slow(item.nodeid):
            item.add_marker(pytest.mark.slow)
