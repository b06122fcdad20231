# The micro-batcher's admission and taking rules, without a model.
bert_add_test(NAME test_batcher SOURCES test_batcher.c LIBS bertsrv TIMEOUT 60 LABELS unit)
