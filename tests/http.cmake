# The framing rules (request smuggling) without a server.
bert_add_test(NAME test_http_framing SOURCES test_http_framing.c LIBS bertsrv TIMEOUT 60
              LABELS unit)
# The request parser (head, target path, chunked bodies) without a server.
bert_add_test(NAME test_http_parse SOURCES test_http_parse.c LIBS bertsrv TIMEOUT 60 LABELS unit)

# HTTP integration tests: a real bertserve on a free loopback port, driven by
# stdlib-only Python (tests/http/harness.py).
find_program(SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
set(HTTP_MODEL ${BERT_TEST_WORK}/http/model)

# A small untrained checkpoint with every head, made by `bert init`.
add_test(NAME http_model
         COMMAND bert_cli init --out ${HTTP_MODEL} --tokenizer ${BERT_TEST_DATA}/tokenizer/minilm
                 --layers 2 --hidden 128 --heads 2 --intermediate 512 --mlm
                 --labels NEGATIVE,POSITIVE --weight-std 0.05 --bias-range 0.02 --ln-range 0.1
                 --seed 7)
set_tests_properties(http_model PROPERTIES FIXTURES_SETUP http_model TIMEOUT 60)

# Time bounds in the tests stretch for the slower sanitizer builds.
set(HTTP_TEST_ENV "TMPDIR=${BERT_TEST_WORK}")
if(BERT_SANITIZE OR BERT_TSAN)
  list(APPEND HTTP_TEST_ENV "BERT_TEST_SANITIZED=1")
endif()

foreach(t routes load hostile faults pressure serving loops chaos)
  add_test(NAME http_${t}
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/http/test_${t}.py
                   ${CMAKE_BINARY_DIR}/bin ${HTTP_MODEL})
  set_tests_properties(http_${t} PROPERTIES FIXTURES_REQUIRED http_model TIMEOUT 300
                       LABELS http ENVIRONMENT "${HTTP_TEST_ENV}")
endforeach()

# The other encoder families and /rerank: the test makes its own checkpoints.
add_test(NAME http_arch
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/http/test_arch.py
                 ${CMAKE_BINARY_DIR}/bin ${BERT_TEST_DATA}/tokenizer)
# Its real-size checkpoints (MPNet, NomicBERT, JinaBERT from their real
# config.json, 110-137M parameters) took 290 s under ASan on a loaded 2-core
# machine.
set_tests_properties(http_arch PROPERTIES TIMEOUT 900 LABELS http
                     ENVIRONMENT "${HTTP_TEST_ENV}")

# The extraction routes (NER, question answering, zero-shot): the test makes
# its own checkpoints, with a SQuAD sample for long contexts.
add_test(NAME http_extract
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/http/test_extract.py
                 ${CMAKE_BINARY_DIR}/bin ${BERT_TEST_DATA}/tokenizer
                 ${BERT_TEST_DATA}/extraction/squad-v1.1-dev-sample.json)
set_tests_properties(http_extract PROPERTIES TIMEOUT 300 LABELS http
                     ENVIRONMENT "${HTTP_TEST_ENV}")

# The route tests again with the server under valgrind memcheck, so one
# session serves every route and every error path: a memory error or a
# definite or indirect leak makes the server exit 99 instead of 0, which the
# test's tear-down checks. Sanitizer builds cannot run under valgrind.
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT BERT_SANITIZE AND NOT BERT_TSAN)
  set(VALGRIND_WRAPPER "${VALGRIND} -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=99")
  add_test(NAME http_valgrind
           COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/http/test_routes.py
                   ${CMAKE_BINARY_DIR}/bin ${HTTP_MODEL})
  set_tests_properties(http_valgrind PROPERTIES FIXTURES_REQUIRED http_model TIMEOUT 900
                       LABELS "http;valgrind"
                       ENVIRONMENT "TMPDIR=${BERT_TEST_WORK};BERTSERVE_WRAPPER=${VALGRIND_WRAPPER}")
endif()
