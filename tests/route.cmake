# The route table (proto/route.c) and the metrics labels it gives the server.
bert_add_test(NAME test_proto_route SOURCES test_proto_route.c LIBS bertproto
              TIMEOUT 60 LABELS unit)
bert_add_test(NAME test_metrics_labels SOURCES test_metrics_labels.c LIBS bertsrv
              TIMEOUT 60 LABELS unit)
