# Issue 20: what real clients send. The numeric paths they reach against the
# float64 reference (tests/golden/make_client_goldens.py) over real HTTP.
# (Areas load alphabetically: this one after http.cmake, whose python and
# checkpoint it uses.)
add_test(NAME http_client_goldens
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/http/test_client_goldens.py
                 ${CMAKE_BINARY_DIR}/bin ${PROJECT_SOURCE_DIR} ${BERT_TEST_WORK}/client-goldens)
set_tests_properties(http_client_goldens PROPERTIES TIMEOUT 300 LABELS http
                     ENVIRONMENT "TMPDIR=${BERT_TEST_WORK}")

# The real npm clients (openai, @huggingface/inference, cohere-ai,
# @langchain/openai, pinned in tests/clients/package-lock.json; `npm ci` there
# first, as .ci/run does) against real servers.
add_test(NAME http_clients
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/clients/test_clients.py
                 ${CMAKE_BINARY_DIR}/bin ${HTTP_MODEL} ${BERT_TEST_DATA}/tokenizer/minilm
                 ${BERT_TEST_WORK}/clients)
set_tests_properties(http_clients PROPERTIES FIXTURES_REQUIRED http_model TIMEOUT 300
                     LABELS http ENVIRONMENT "TMPDIR=${BERT_TEST_WORK}")

# proto/openapi.yaml against the code and a real server (its error examples).
add_test(NAME http_openapi
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/http/test_openapi.py
                 ${CMAKE_BINARY_DIR}/bin ${HTTP_MODEL} ${PROJECT_SOURCE_DIR})
set_tests_properties(http_openapi PROPERTIES FIXTURES_REQUIRED http_model TIMEOUT 120
                     LABELS http ENVIRONMENT "TMPDIR=${BERT_TEST_WORK}")
