# Server configuration: the TOML reader, the key table and CPU detection.
bert_add_test(NAME test_toml SOURCES test_toml.c LIBS bertsrv
              ARGS ${CMAKE_SOURCE_DIR}/config.example.toml TIMEOUT 60 LABELS unit)
bert_add_test(NAME test_config SOURCES test_config.c LIBS bertsrv
              ARGS ${CMAKE_SOURCE_DIR}/config.example.toml TIMEOUT 60 LABELS unit)
bert_add_test(NAME test_cpu SOURCES test_cpu.c LIBS bertsrv TIMEOUT 60 LABELS unit)
