# Compute building blocks: the team's width (model/team.c), which the server
# narrows under load.
bert_add_test(NAME test_team SOURCES test_team.c LIBS bert_internal TIMEOUT 60 LABELS "unit;threads")
# The direct product for a few rows (model/linear_small.c), every block shape.
bert_add_test(NAME test_linear_small SOURCES test_linear_small.c LIBS bert_internal TIMEOUT 60 LABELS unit)
# The f32 product over packed weights (model/linear_f32.c), every block shape
# and panel remainder; skipped where the CPU has no AVX-512F.
bert_add_test(NAME test_linear_f32 SOURCES test_linear_f32.c LIBS bert_internal TIMEOUT 120 LABELS unit)
set_tests_properties(test_linear_f32 PROPERTIES SKIP_RETURN_CODE 77)
# The bf16 product over packed weights on AVX512_BF16 (model/linear_bf16_avx512.c),
# every block shape, pairing and panel remainder; skipped where the CPU has none.
bert_add_test(NAME test_linear_bf16 SOURCES test_linear_bf16.c LIBS bert_internal TIMEOUT 120 LABELS unit)
set_tests_properties(test_linear_bf16 PROPERTIES SKIP_RETURN_CODE 77)
# The same products on oneDNN's bf16 kernels (model/linear_bf16.c), AMX's
# path, on any CPU where oneDNN has them: padding and strided outputs.
bert_add_test(NAME test_linear_bf16_onednn SOURCES test_linear_bf16_onednn.c LIBS bert_internal
              TIMEOUT 120 LABELS unit)
set_tests_properties(test_linear_bf16_onednn PROPERTIES SKIP_RETURN_CODE 77)
# The int8 dense layer (model/linear_int8.c) against the float64 reference
# of tests/golden/make_int8_goldens.py; skipped where int8 cannot run.
bert_add_test(NAME test_linear_int8 SOURCES test_linear_int8.c LIBS bert_internal PkgConfig::JANSSON
              ARGS ${BERT_TEST_DATA}/golden-int8/linear.json TIMEOUT 60 LABELS unit)
set_tests_properties(test_linear_int8 PROPERTIES SKIP_RETURN_CODE 77)
# Attention's blocks of 8 query rows (AVX-512) and of 4 against float64.
bert_add_test(NAME test_attention_blocks SOURCES test_attention_blocks.c LIBS bert_internal
              TIMEOUT 60 LABELS unit)
# Its fused paths (epilogue, stacked Q/K/V, kept quantized rows) against
# the unfused ones.
bert_add_test(NAME test_linear_int8_fused SOURCES test_linear_int8_fused.c LIBS bert_internal
              TIMEOUT 60 LABELS unit)
set_tests_properties(test_linear_int8_fused PROPERTIES SKIP_RETURN_CODE 77)
# The vector erf and the exact GELU kernel (model/vmath.h, kernels.c)
# against libm over a dense range.
bert_add_test(NAME test_vmath SOURCES test_vmath.c LIBS bert_internal ${MATH_LIB} TIMEOUT 60 LABELS unit)
set_source_files_properties(test_vmath.c PROPERTIES COMPILE_OPTIONS -Wno-psabi)
