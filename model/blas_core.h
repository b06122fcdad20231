/* OpenBLAS picks its kernels from CPUID when it loads. Debian's 0.3.21 does
 * not know newer Xeons (family 6 model 207, for one) and falls back to its
 * Prescott (SSE3) kernels: sgemm runs about 4x slower than on the SkylakeX
 * kernels the CPU can run. OPENBLAS_CORETYPE overrides the choice, but is
 * read only at load time, so the fix is to set it and re-execute. */
#ifndef BERT_BLAS_CORE_H
#define BERT_BLAS_CORE_H

/* The OpenBLAS kernel family in use, e.g. "SkylakeX". */
const char *bert_blas_core(void);

/* Call first thing in main(). When OpenBLAS chose kernels older than the CPU
 * supports and OPENBLAS_CORETYPE is unset, sets it and re-executes this
 * program with the same arguments; otherwise (or if exec fails) returns.
 * Skipped under valgrind, which would lose the child. */
void bert_blas_core_fix(char **argv);

#endif
