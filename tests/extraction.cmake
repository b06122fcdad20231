# Token classification, question answering and zero-shot classification
# (issue 21): the whole chain against tests/extraction's goldens.
bert_add_test(NAME test_extract_golden SOURCES test_extract_golden.c golden_init.c
              LIBS bertproto berttrain bert_internal
              ARGS ${BERT_TEST_DATA}/extraction/golden ${BERT_TEST_DATA} ${BERT_TEST_WORK}/extraction
              LABELS golden TIMEOUT 600)
