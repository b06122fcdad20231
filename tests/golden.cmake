# Golden numerics against the PyTorch reference (tests/golden/README.md) and
# the checkpoint error paths.

# Timeouts: under ASan (-O0) the two take about 60 s of CPU each; on a
# shared 2-core machine at load 15-20 that became 175-300 s of wall time.
bert_add_test(NAME test_golden SOURCES test_golden.c golden_init.c LIBS berttrain bert_internal
              ARGS ${BERT_TEST_DATA}/golden ${BERT_TEST_WORK}/golden LABELS golden TIMEOUT 900)
# DistilBERT, RoBERTa / XLM-R and ELECTRA checkpoints: the same test binary
# on their own folder of goldens, so each run stays well inside its timeout.
add_test(NAME test_golden_families
         COMMAND test_golden ${BERT_TEST_DATA}/golden-families ${BERT_TEST_WORK}/golden-families)
set_tests_properties(test_golden_families PROPERTIES TIMEOUT 900 LABELS golden)

bert_add_test(NAME test_checkpoint_errors SOURCES test_checkpoint_errors.c LIBS berttrain bert_internal
              ARGS ${BERT_TEST_WORK}/checkpoint-errors TIMEOUT 60)
# Its corrupted folders feed the CLI test below.
set_tests_properties(test_checkpoint_errors PROPERTIES FIXTURES_SETUP bad_checkpoints)

# The CLI turns a checkpoint that does not load into exit status 1 and a
# message naming the file: sh -c SCRIPT BERT MODEL_DIR EXPECTED_SUBSTRING.
set(BERT_EXPECT_LOAD_FAILURE
    "out=$(\"$0\" embed --model \"$1\" </dev/null 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && case \"$out\" in *\"$2\"*) ;; *) exit 1 ;; esac")
add_test(NAME cli_missing_model
         COMMAND sh -c "${BERT_EXPECT_LOAD_FAILURE}" $<TARGET_FILE:bert_cli>
                 ${BERT_TEST_WORK}/no-such-model ${BERT_TEST_WORK}/no-such-model/config.json)
add_test(NAME cli_truncated_model
         COMMAND sh -c "${BERT_EXPECT_LOAD_FAILURE}" $<TARGET_FILE:bert_cli>
                 ${BERT_TEST_WORK}/checkpoint-errors/truncated
                 ${BERT_TEST_WORK}/checkpoint-errors/truncated/model.safetensors)
set_tests_properties(cli_missing_model cli_truncated_model PROPERTIES TIMEOUT 30)
set_tests_properties(cli_truncated_model PROPERTIES FIXTURES_REQUIRED bad_checkpoints)

# A checkpoint that loads but overflows at run time (test_checkpoint_errors'
# "overflow": one embedding row of 3e38): a request on that token is refused
# as a non-finite result (exit 1, the server's 500), one without it answers.
set(BERT_EXPECT_NON_FINITE
    "for route in classify embed fill-mask; do out=$(echo '{\"inputs\": \"the [MASK]\"}' | \"$0\" $route --model \"$1\" 2>&1); rc=$?; echo \"$route: $out\"; [ $rc -eq 1 ] || exit 1; case \"$out\" in *non-finite*) ;; *) exit 1 ;; esac; echo '{\"inputs\": \"cat [MASK]\"}' | \"$0\" $route --model \"$1\" >/dev/null || exit 1; done")
add_test(NAME cli_non_finite_output
         COMMAND sh -c "${BERT_EXPECT_NON_FINITE}" $<TARGET_FILE:bert_cli>
                 ${BERT_TEST_WORK}/checkpoint-errors/overflow)
set_tests_properties(cli_non_finite_output PROPERTIES TIMEOUT 30
                     FIXTURES_REQUIRED bad_checkpoints)

# int8 dense layers against f32 on real data with the default model: SST-2
# dev accuracy and STS-B test Spearman (issue 23's gates). The data sits
# beside the repository (../shared/data); without it the test is skipped.
set(BERT_SHARED_DATA ${CMAKE_SOURCE_DIR}/../shared/data)
bert_add_test(NAME test_int8_accuracy SOURCES test_int8_accuracy.c LIBS berttrain
              ARGS ${CMAKE_SOURCE_DIR}/models/default ${BERT_SHARED_DATA}/sst2/dev.tsv
                   ${BERT_SHARED_DATA}/stsbenchmark/sts-test.csv
              LABELS golden TIMEOUT 600)
set_tests_properties(test_int8_accuracy PROPERTIES SKIP_RETURN_CODE 77)

# dtype int8 where the CPU has none of its instructions (oneDNN told to stop
# at AVX2): `bert` and bertserve refuse, exit 1, and say why; they never
# fall back to f32 silently.
set(BERT_EXPECT_INT8_REFUSED
    "out=$(ONEDNN_MAX_CPU_ISA=AVX2 \"$@\" </dev/null 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && case \"$out\" in *\"int8 is not available\"*) ;; *) exit 1 ;; esac")
add_test(NAME cli_int8_refused
         COMMAND sh -c "${BERT_EXPECT_INT8_REFUSED}" sh $<TARGET_FILE:bert_cli> embed
                 --model ${CMAKE_SOURCE_DIR}/models/default --dtype int8)
add_test(NAME bertserve_int8_refused
         COMMAND sh -c "${BERT_EXPECT_INT8_REFUSED}" sh $<TARGET_FILE:bertserve>
                 --model ${CMAKE_SOURCE_DIR}/models/default --dtype int8 --port 1)
set_tests_properties(cli_int8_refused bertserve_int8_refused PROPERTIES TIMEOUT 30)
