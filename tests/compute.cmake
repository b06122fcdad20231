# Compute building blocks: the team's width (model/team.c), which the server
# narrows under load.
bert_add_test(NAME test_team SOURCES test_team.c LIBS bert_internal TIMEOUT 60 LABELS "unit;threads")
# The direct product for a few rows (model/linear_small.c), every block shape.
bert_add_test(NAME test_linear_small SOURCES test_linear_small.c LIBS bert_internal TIMEOUT 60 LABELS unit)
