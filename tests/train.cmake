# The trainer (issue 5): masking, gradients, optimiser, CLI runs.

bert_add_test(NAME test_train_mask SOURCES test_train_mask.c LIBS berttrain
              ARGS ${BERT_TEST_DATA}/tokenizer/bert-base-uncased TIMEOUT 60)

bert_add_test(NAME test_train_grad SOURCES test_train_grad.c LIBS berttrain
              ARGS ${BERT_TEST_DATA}/golden/train-step.json
                   ${BERT_TEST_DATA}/golden/train-step-multi.json
                   ${BERT_TEST_DATA}/golden/train-step-regression.json
                   ${BERT_TEST_DATA}/golden/train-step-causal.json TIMEOUT 120)

add_test(NAME train_cli
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/train_cli.sh $<TARGET_FILE:bert_cli>
                 ${BERT_TEST_DATA}/train ${BERT_TEST_DATA}/tokenizer/bert-base-uncased
                 ${BERT_TEST_WORK}/train-cli)
set_tests_properties(train_cli PROPERTIES TIMEOUT 300 LABELS train)

bert_add_test(NAME test_train_save SOURCES test_train_save.c LIBS berttrain
              ARGS ${BERT_TEST_DATA}/tokenizer/bert-base-uncased ${BERT_TEST_WORK}/train-save
              TIMEOUT 60)

add_test(NAME train_heads
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/train_heads.sh $<TARGET_FILE:bert_cli>
                 ${BERT_TEST_DATA}/train ${BERT_TEST_DATA}/tokenizer/bert-base-uncased
                 ${BERT_TEST_WORK}/train-heads)
set_tests_properties(train_heads PROPERTIES TIMEOUT 300 LABELS train)

bert_add_test(NAME test_train_heads SOURCES test_train_heads.c LIBS berttrain
              ARGS ${BERT_TEST_DATA}/tokenizer/bert-base-uncased ${BERT_TEST_WORK}/train-heads-unit
                   ${BERT_TEST_DATA}/golden/train-metrics.json TIMEOUT 60)

add_test(NAME train_causal
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/train_causal.sh $<TARGET_FILE:bert_cli>
                 ${BERT_TEST_DATA}/train ${BERT_TEST_DATA}/tokenizer/bert-base-uncased
                 ${BERT_TEST_WORK}/train-causal)
set_tests_properties(train_causal PROPERTIES TIMEOUT 300 LABELS train)

# The fine-tuning loop as a library function (train/finetune.c): the kept
# checkpoint is the best evaluation's (checked by the inference engine),
# runs repeat bit for bit, bad options name their flag.
bert_add_test(NAME test_train_loop SOURCES test_train_loop.c LIBS berttrain
              ARGS ${BERT_TEST_DATA} ${BERT_TEST_WORK}/train-loop TIMEOUT 120 LABELS train)
