# Fuzz targets (tests/fuzz/, one per parser of untrusted input). Every build
# replays each target's seed corpus and the inputs of crashes already fixed
# as a ctest (fuzz_<name>_replay, so the release and ASan runs cover them);
# with clang and -DBERT_FUZZ=ON it also builds the libFuzzer binaries
# fuzz_<name>, which tests/fuzz/run.sh runs for a bounded time.
option(BERT_FUZZ "Build the libFuzzer targets (needs clang)" OFF)
set(FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(FUZZ_LIBFUZZER OFF)
if(BERT_FUZZ)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    set(FUZZ_LIBFUZZER ON)
    # Coverage feedback from the code under test, not only the target.
    foreach(lib bertbase berttok bert bertproto bertsrv)
      if(TARGET ${lib})
        target_compile_options(${lib} PRIVATE -fsanitize=fuzzer-no-link,address,undefined)
      endif()
    endforeach()
  else()
    message(WARNING "BERT_FUZZ needs clang (CC=clang); only the corpus replays are built")
  endif()
endif()

# name:library pairs; toml.c, http_framing.c and http_parse.c live in the
# server library.
foreach(pair request:bertproto tokenizer:berttok toml:bertsrv config_json:bert_internal
             safetensors:bert_internal http_framing:bertsrv http_parse:bertsrv)
  string(REPLACE ":" ";" parts ${pair})
  list(GET parts 0 name)
  list(GET parts 1 lib)
  if(NOT TARGET ${lib})
    continue()
  endif()
  set(inputs ${FUZZ_DIR}/corpus/${name} ${FUZZ_DIR}/regressions/${name})
  bert_add_test(NAME fuzz_${name}_replay
                SOURCES ${FUZZ_DIR}/fuzz_${name}.c ${FUZZ_DIR}/replay_main.c
                LIBS ${lib} ARGS ${inputs} TIMEOUT 120 LABELS fuzz)
  target_include_directories(fuzz_${name}_replay PRIVATE ${FUZZ_DIR})
  target_compile_definitions(fuzz_${name}_replay PRIVATE BERT_FUZZ_DATA="${BERT_TEST_DATA}")
  if(FUZZ_LIBFUZZER)
    add_executable(fuzz_${name} ${FUZZ_DIR}/fuzz_${name}.c)
    target_include_directories(fuzz_${name} PRIVATE ${FUZZ_DIR})
    target_compile_definitions(fuzz_${name} PRIVATE BERT_FUZZ_DATA="${BERT_TEST_DATA}")
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${name} PRIVATE ${lib})
    set_target_properties(fuzz_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                          ${CMAKE_BINARY_DIR}/fuzz)
  endif()
endforeach()
