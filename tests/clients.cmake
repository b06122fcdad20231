# Issue 20: what real clients send. The numeric paths they reach against the
# float64 reference (tests/golden/make_client_goldens.py) over real HTTP.
# (Areas load alphabetically: this one before http.cmake, which finds it too.)
find_program(SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
add_test(NAME http_client_goldens
         COMMAND ${SYSTEM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/http/test_client_goldens.py
                 ${CMAKE_BINARY_DIR}/bin ${PROJECT_SOURCE_DIR} ${BERT_TEST_WORK}/client-goldens)
set_tests_properties(http_client_goldens PROPERTIES TIMEOUT 300 LABELS http
                     ENVIRONMENT "TMPDIR=${BERT_TEST_WORK}")
