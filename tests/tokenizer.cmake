# Tokenizer: parity with Hugging Face `tokenizers` (expected outputs made by
# tests/tokenizer/gen, see tests/tokenizer/README.md), Unicode tables, errors.
# 180 s: about 15 s here in a release build, over 60 s under the sanitizers.
bert_add_test(NAME test_tokenizer SOURCES test_tokenizer.c test_tokenizer_util.c LIBS berttok
              TIMEOUT 180)
bert_add_test(NAME test_tokenizer_load SOURCES test_tokenizer_load.c test_tokenizer_util.c
              LIBS berttok TIMEOUT 60)
# The Unicode tables are private to tokenizer/: the test reaches in.
bert_add_test(NAME test_tokenizer_unicode SOURCES test_tokenizer_unicode.c LIBS berttok TIMEOUT 60)
target_include_directories(test_tokenizer_unicode PRIVATE ${PROJECT_SOURCE_DIR}/tokenizer)

# Regenerates tokenizer/unicode_skew.c (see tests/tokenizer/README.md); not
# part of the default build.
add_executable(tok_unicode_skew_gen EXCLUDE_FROM_ALL tokenizer/unicode_skew_gen.c)
target_include_directories(tok_unicode_skew_gen PRIVATE ${PROJECT_SOURCE_DIR}/tokenizer)
target_link_libraries(tok_unicode_skew_gen PRIVATE PkgConfig::UTF8PROC)
