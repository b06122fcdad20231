# Deployment tests (issue 4): the Dockerfile, the Kubernetes and compose
# manifests, nginx in front of three replicas, cmake --install and the
# systemd unit. Loopback only; stdlib Python plus Debian's python3-yaml,
# nginx, strace and systemd-analyze (deploy/install-deps.sh installs them;
# a missing tool skips its check with a message).
find_program(DEPLOY_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
set(DEPLOY_MODEL ${BERT_TEST_WORK}/deploy/model)
set(DEPLOY_DIR ${CMAKE_CURRENT_SOURCE_DIR}/deploy)

# A small untrained checkpoint with every head, made by `bert init`.
add_test(NAME deploy_model
         COMMAND bert_cli init --out ${DEPLOY_MODEL} --tokenizer ${BERT_TEST_DATA}/tokenizer/minilm
                 --layers 2 --hidden 128 --heads 2 --intermediate 512 --mlm
                 --labels NEGATIVE,POSITIVE --weight-std 0.05 --bias-range 0.02 --ln-range 0.1
                 --seed 7)
set_tests_properties(deploy_model PROPERTIES FIXTURES_SETUP deploy_model TIMEOUT 60)

# image and install also read the build folder (cmake --install).
foreach(t balancer image manifests install)
  set(args ${CMAKE_BINARY_DIR}/bin ${DEPLOY_MODEL})
  if(t STREQUAL image OR t STREQUAL install)
    list(APPEND args ${CMAKE_BINARY_DIR})
  endif()
  add_test(NAME deploy_${t}
           COMMAND ${DEPLOY_PYTHON3} ${DEPLOY_DIR}/test_${t}.py ${args})
  set_tests_properties(deploy_${t} PROPERTIES FIXTURES_REQUIRED deploy_model TIMEOUT 300
                       LABELS deploy ENVIRONMENT "TMPDIR=${BERT_TEST_WORK}")
endforeach()
# Twenty seconds of load on both cores: alone, so neither it nor the other
# tests measure each other.
set_tests_properties(deploy_balancer PROPERTIES RUN_SERIAL TRUE)
