# The trainer (issue 5): masking, gradients, optimiser, CLI runs.

bert_add_test(NAME test_train_mask SOURCES test_train_mask.c LIBS bert
              ARGS ${BERT_TEST_DATA}/tokenizer/bert-base-uncased TIMEOUT 60)

bert_add_test(NAME test_train_grad SOURCES test_train_grad.c LIBS bert
              ARGS ${BERT_TEST_DATA}/golden/train-step.json TIMEOUT 60)
