# The compute team's width (model/team.c), which the server narrows under load.
bert_add_test(NAME test_team SOURCES test_team.c LIBS bert TIMEOUT 60 LABELS "unit;threads")
