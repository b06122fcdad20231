# proto/: the wire contract. The writer and request tests need nothing from
# the engine; the job test links a stand-in tokenizer (proto_fake_tokenizer.c)
# in place of the real one.
bert_add_test(NAME test_proto_writer SOURCES test_proto_writer.c LIBS bertproto
              TIMEOUT 60 LABELS unit)
bert_add_test(NAME test_proto_request SOURCES test_proto_request.c LIBS bertproto
              TIMEOUT 60 LABELS unit)
bert_add_test(NAME test_proto_job SOURCES test_proto_job.c proto_fake_tokenizer.c
              LIBS bertproto TIMEOUT 60 LABELS unit)
# The same rendering with the real WordPiece tokenizer, once it is merged.
if(EXISTS ${PROJECT_SOURCE_DIR}/tokenizer/tokenizer.c)
  bert_add_test(NAME test_proto_hf SOURCES test_proto_hf.c LIBS bertproto
                TIMEOUT 60 LABELS unit)
endif()
