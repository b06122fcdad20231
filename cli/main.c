/* `bert`: the engine offline. Route subcommands read a request as JSON on
 * stdin (or JSON Lines with --jsonl) and write the response the server
 * would send. */
#include <stdio.h>
#include <string.h>

#include "bert.h"
#include "cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bert <command> [options]\n"
            "\n"
            "requests (stdin JSON -> stdout JSON, as the HTTP routes):\n"
            "  tokenize   --model DIR [--jsonl]\n"
            "  embed      --model DIR [--jsonl]\n"
            "  fill-mask  --model DIR [--jsonl]\n"
            "  classify   --model DIR [--jsonl]\n"
            "  rerank     --model DIR [--jsonl]   {\"query\", \"texts\"} with a cross-encoder\n"
            "  score      --model DIR [--jsonl]   {\"text_1\", \"text_2\"} pairs (vLLM)\n"
            "  pooling    --model DIR [--jsonl]   {\"input\", \"task\"} (vLLM's Pooling API)\n"
            "  replaced-tokens --model DIR [--jsonl]   an ELECTRA discriminator's per-token P\n"
            "  token-classification --model DIR [--jsonl]   named entities\n"
            "  question-answering --model DIR [--jsonl]   {\"inputs\": {\"question\", \"context\"}}\n"
            "  zero-shot-classification --model DIR [--jsonl]   with \"candidate_labels\"\n"
            "\n"
            "models:\n"
            "  init       --out DIR --tokenizer DIR [geometry]   write an untrained checkpoint\n"
            "\n"
            "training:\n"
            "  pretrain   --corpus FILE... --out DIR --tokenizer DIR   masked-LM pretraining\n"
            "  finetune   --model DIR --train TSV --dev TSV --out DIR [--freeze-encoder]\n"
            "  eval       --model DIR --data TSV   accuracy and F1 of a classifier\n"
            "  mask-stats --tokenizer DIR --corpus FILE   masked-LM corruption statistics\n"
            "  mlm-eval   --model DIR --corpus FILE...   held-out MLM accuracy by position kind\n"
            "\n"
            "  bench      --model DIR (--workload FILE | --texts FILE)   time the engine\n"
            "\n"
            "  version    print the version\n");
}

int main(int argc, char **argv)
{
    bert_blas_core_fix(argv);
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("bert %s\n", BERTSERVE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "bench") == 0)
        return cli_bench_command(argc - 1, argv + 1);
    if (strcmp(cmd, "pretrain") == 0)
        return cli_pretrain_command(argc - 1, argv + 1);
    if (strcmp(cmd, "finetune") == 0)
        return cli_finetune_command(argc - 1, argv + 1);
    if (strcmp(cmd, "eval") == 0)
        return cli_eval_command(argc - 1, argv + 1);
    if (strcmp(cmd, "mlm-eval") == 0)
        return cli_mlm_eval_command(argc - 1, argv + 1);
    if (strcmp(cmd, "mask-stats") == 0)
        return cli_mask_stats_command(argc - 1, argv + 1);
    if (strcmp(cmd, "init") == 0)
        return cli_init_command(argc - 1, argv + 1);
    int rc = cli_request_command(cmd, argc - 1, argv + 1);
    if (rc != CLI_NOT_A_COMMAND)
        return rc;
    fprintf(stderr, "bert: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
