"""The English labels of :mod:`.i18n`."""

EN = {
    # rendering ---------------------------------------------------------------------------------
    "step_n": "Step {n}: {title}",
    "warning": "Note:",
    "list_sep": ", ",
    "latex.compile": "compile with xelatex when the text has Chinese characters (xeCJK)",
    "counting": "Positions, rows, columns, dimensions, heads and layers count from 0, as in the trace, the viewer "
                "and --position, --head, --layer.",

    # toy ---------------------------------------------------------------------------------------
    "toy.title": "Self-attention worked out by hand",
    "toy.title_named": "Self-attention worked out by hand: {name}",
    "toy.intro": "{L} tokens ({tokens}); queries and keys have $d_k = {dk}$ dimensions, values $d_v = {dv}$. "
                 "The sums and products below are exact (the numbers are taken as written), square roots, exp and "
                 "the softmax are computed to 100 digits, and only the display rounds (half-up).",
    "toy.x_caption": "X: one row per token, {d} numbers each (e.g. its embedding)",
    "step.q": "queries $Q = X W_Q$",
    "step.k": "keys $K = X W_K$",
    "step.v": "values $V = X W_V$",
    "step.given_qkv": "the given $Q$, $K$, $V$",
    "step.normalise_cosine": "unit-length $q$ and $k$ (cosine scoring)",
    "step.normalise_qknorm": "layer-normalised $q$ and $k$ (QK-norm)",
    "step.normalise": "$q$ and $k$ as the scoring {name} prepares them",
    "toy.q_why": "Each token's query says what it is looking for: row $i$ of $X$ times each column of $W_Q$.",
    "toy.k_why": "Each token's key says what it offers to the others: row $i$ of $X$ times each column of $W_K$.",
    "toy.v_why": "Each token's value is the content it passes on when someone attends to it.",
    "step.scores": "raw scores $S = Q K^{\\top}$",
    "toy.scores_why": "Score $S_{ij}$ is the dot product of query $i$ with key $j$: how well token $i$'s "
                      "question matches token $j$'s offer. Row $i$ holds query $i$ against every key.",
    "toy.rows_cols": "rows: queries; columns: keys",
    "step.scaled": "scaling",
    "toy.scale_why": "Divide by $\\sqrt{d_k} = \\sqrt{{dk}} \\approx {sqrt}$. Why: if the entries of $q$ and $k$ "
                     "have mean 0 and variance 1, $q \\cdot k$ is a sum of $d_k$ such products and has "
                     "variance $d_k$; dividing by $\\sqrt{d_k}$ brings the variance back to 1 for any $d_k$, so "
                     "softmax does not saturate (see attnscope explain scaling).",
    "toy.scale_unscaled": "No scaling: the factor is $c = {c}$.",
    "toy.scale_inv_d": "Multiply by $c = 1/d_k = {c}$.",
    "toy.scale_cosine": "Multiply by $c = 1/\\tau = {c}$.",
    "toy.scale_factor": "Multiply by the factor of the scoring {name}: $c = {c}$.",
    "step.masked": "masking",
    "toy.mask_why": "Blocked pairs get $-\\infty$: $e^{-\\infty} = 0$, so a query gives them no weight.",
    "step.exp": "exponentials $\\exp(S')$",
    "toy.exp_why": "exp makes every score positive and stretches the gaps between them: a score higher by 1 "
                   "becomes $e \\approx 2.718$ times as large.",
    "toy.exp_shift": "In rows {rows} the largest score is above {limit} and its exponential would be huge, "
                     "so these rows show $e^{s - m}$ with $m$ the row maximum. Dividing numerator and denominator "
                     "by the same $e^{m}$ leaves the weights unchanged.",
    "toy.exp_shift_one": "In row {rows} the largest score is above {limit} and its exponential would be huge, "
                         "so this row shows $e^{s - m}$ with $m$ the row maximum. Dividing numerator and "
                         "denominator by the same $e^{m}$ leaves the weights unchanged.",
    "step.sums": "row sums",
    "step.weights": "softmax weights $A = E / \\Sigma$",
    "toy.weights_why": "Dividing each exponential by its row sum turns the row into a probability distribution: "
                       "all weights are positive and each row adds up to 1.",
    "toy.rows_sum_one": "each row sums to 1",
    "step.output": "output $O = A V$",
    "toy.output_why": "Each output row is the weighted sum of the value rows, with that row's weights.",
    "step.projected": "output projection $Y = O W_O$",
    "step.meaning": "what the output means",
    "toy.meaning_row": "{tok} takes {shares}.",
    "toy.share": "{pct} from {tok}",
    "toy.meaning_first_vo": "Token {tok} offered the value {vs} = {v}; its output is {os} = {o}: its own "
                            "value mixed with the values of the tokens it attends to (both vectors live in the "
                            "value space, $d_v$ wide).",
    "toy.meaning_first_xy": "Token {tok} started as {x} and, after $W_O$ (which maps back to the width of $X$), "
                            "comes out as {y}: its own content mixed with what it took from the other tokens.",
    "toy.meaning_blind": "{tok} sees no key (every key is masked): it takes nothing, and its output is the zero "
                         "vector.",
    "toy.blind_row": "Row {rows} ({toks}) sees no key at all: its exponentials are all 0, so its sum is 0 and "
                     "it gets no weights (0 everywhere, not a probability distribution).",
    "toy.blind_rows": "Rows {rows} ({toks}) see no key at all: their exponentials are all 0, so their sums are 0 "
                      "and they get no weights (0 everywhere, not a probability distribution).",
    "toy.blind_weights": "Row {row} ({tok}): the sum is 0, nothing to divide; every weight is 0.",
    "toy.rows_sum_one_but": "each row sums to 1, except row {rows}, which sees no key (all 0)",
    "toy.rows_sum_one_but_many": "each row sums to 1, except rows {rows}, which see no key (all 0)",
    "toy.meaning": "The output is no longer the token's own vector: the query chose (through the scores) which "
                   "tokens matter, and the weights blended their values in. Same token, different context, "
                   "different output.",
    # one row --------------------------------------------------------------------------------
    "row.title_model": "The row of {tok}: layer {layer}, head {head}, worked out",
    "row.title_scores": "The row of {tok} worked out",
    "row.title_scores_plain": "One row of attention worked out",
    "row.intro_model": "Model {model}, layer {layer}, head {head}; the text has {L} tokens: {tokens}. "
                       "The query is {tok}; each head works with $d_k = {dk}$ dimensions. q, k and v are "
                       "taken from the model's trace; everything after them is recomputed here in float64.",
    "row.intro_scores": "{S} raw scores of one query against every key, given; they are divided by $\\sqrt{d_k} = \\sqrt{{dk}}$.",
    "row.intro_scores_factor": "{S} raw scores of one query against every key, given; they are multiplied by $c = {c}$.",
    "row.ambiguous": "{tok} occurs at positions {positions}; using the first, position {pos} "
                     "(pass a position to choose another).",
    "row.step_raw": "raw scores $s_j = q \\cdot k_j$",
    "row.raw_why": "The query vector of {tok} against the key vector of every token (the model's $Q K^{\\top}$ row).",
    "row.raw_given": "The given raw scores of {tok} against every key.",
    "row.scale_factor": "Multiply by the model's factor $c = {c}$.",
    "row.masked": "Keys {keys} are masked ($-\\infty$): they get $e^{-\\infty} = 0$ and weight 0.",
    "row.exp_shift": "The largest score is above {limit}, so $e^{s'}$ would be huge. The column shows "
                     "$e^{s' - m}$ with $m = {m}$ (the largest score): numerator and denominator are both divided "
                     "by $e^{m}$, so the probabilities are the same.",
    "row.step_sum": "the sum $\\Sigma$",
    "row.step_prob": "probabilities $p_j = e_j / \\Sigma$",
    "row.prob_sum": "Together: {total}.",
    "row.step_output": "weighted sum of the value vectors",
    "row.sum_why": "Each value vector times its probability, added up. Only the first {n} of {d} dimensions are "
                   "written out; every dimension is computed the same way.",
    "row.v_caption": "V: one row per key token (first {n} of {d} dimensions)",
    "row.step_result": "result",
    "row.meaning": "{tok} puts its attention on {shares}.",
    "row.result": "The new vector of {tok} (first {n} dimensions): {z}.",
    "row.trace_check": "Compared with the model's own float32 numbers: largest difference {ds} in the raw "
                       "scores, {dw} in the probabilities, {dz} in the output vector.",
    "col.pos": "position",
    "col.key": "key token",
    "col.raw": "raw score $s$",
    "col.scaled": "scaled $s'$",
    "col.exp": "$e^{s'}$",
    "col.exp_shift": "$e^{s' - m}$",
    "col.prob": "probability $p$",
    "col.percent": "share",

    # scaling --------------------------------------------------------------------------------
    "sc.title": "Why divide by $\\sqrt{d_k}$? (d_k = {dk})",
    "sc.intro": "Scores are divided by $\\sqrt{d_k} = \\sqrt{{dk}} = {root}$ before softmax. Below: why the "
                "dot products need it, what it does to softmax, and what happens to the gradient without it.",
    "sc.step_growth": "dot products grow with the dimension",
    "sc.growth": "Take $q = k = [0.5, 0.5, \\ldots, 0.5]$: $q \\cdot k$ adds $0.25$ once per dimension, so it "
                 "grows in proportion to $d$.",
    "sc.col_d": "$d_k$",
    "sc.col_qk_half": "$q \\cdot k$ for $q = k = [0.5, \\ldots]$",
    "sc.step_variance": "the variance argument",
    "sc.var_theory": "Let the entries of $q$ and $k$ be independent with mean 0 and variance 1. Each product "
                     "$q_i k_i$ then has mean 0 and variance $\\mathbb{E}[q_i^2]\\,\\mathbb{E}[k_i^2] = 1$, and "
                     "the variances of independent terms add up:",
    "sc.var_sample": "Checked on {n} random pairs of standard-normal vectors per row (seed {seed}):",
    "sc.col_var_theory": "Var(q·k), theory",
    "sc.col_var_sampled": "Var(q·k), sampled",
    "sc.col_std": "std $= \\sqrt{d_k}$",
    "sc.col_var_scaled": "Var(q·k / √d_k), sampled",
    "sc.var_result": "At $d_k = {dk}$ the scores spread with standard deviation about {std} (sampled variance "
                     "{var}); divided by $\\sqrt{d_k}$ their variance is {vs}, close to 1.",
    "sc.step_softmax": "softmax with and without the scale",
    "sc.softmax_intro": "The same scores, once as they are and once divided by $\\sqrt{{dk}} = {root}$:",
    "sc.vec_caption": "scores {v}",
    "sc.col_j": "$j$",
    "sc.col_s": "$s_j$",
    "sc.col_p_raw": "softmax($s$)",
    "sc.col_s_scaled": "$s_j / \\sqrt{d_k}$",
    "sc.col_p_scaled": "softmax($s / \\sqrt{d_k}$)",
    "sc.softmax_max": "Largest weight: {top} without the scale, {top_s} with it. Entropy: {h} vs {h_s} nats "
                      "(a uniform row has {hmax}). Without the scale the row is almost one-hot.",
    "sc.article_raw": "The article prints softmax({v}) $\\approx$ {printed}; computed: {computed}.",
    "sc.article_scaled": "The article prints softmax({v} / 8) = {printed}; computed: {computed}.",
    "sc.article_digits": "At the article's own precision the computed numbers are {shown}: {diffs}.",
    "sc.article_diff": "entry {j} is {c}, not {p}",
    "sc.article_same": "At the article's own precision every printed digit is right.",
    "sc.step_jacobian": "the softmax Jacobian: why saturated rows stop learning",
    "sc.jac_why": "The gradient that reaches the scores (and through them $q$ and $k$) is multiplied by this "
                  "matrix. Each entry is a product of probabilities, so when one $p_i$ is almost 1 and the "
                  "others almost 0, every entry is almost 0.",
    "sc.jac_raw": "$J$ for softmax({v}), no scale",
    "sc.jac_scaled": "$J$ for softmax({v} / {root})",
    "sc.jac_norms": "Largest entry: {a} without the scale, {b} with it; Frobenius norm {fa} vs {fb}, "
                    "{ratio} times larger with the scale.",
    "sc.ce_grad": "If the right answer were position {target} (cross-entropy on these probabilities), the "
                  "gradient $p - y$ would be {g} without the scale and {gs} with it.",
    "sc.jac_conclusion": "A saturated row passes almost no gradient back: the model barely learns from it. "
                         "Dividing by $\\sqrt{d_k}$ keeps the scores near unit variance, the rows soft, and the "
                         "gradient alive.",
    "sc.article_grad": "The article gives these gradients as {g} and {gs}.",
    # check ----------------------------------------------------------------------------------
    "check.title": "Checking {source}",
    "check.problem_toy": "Problem: {what}, {L} tokens ({tokens}).",
    "check.problem_model": "Problem: model {model}, layer {layer}, head {head}, query {tok} (position {pos}), "
                           "text “{text}”.",
    "check.problem_scores": "Problem: one row of {S} given scores, $d_k = {dk}$.",
    "check.rule": "Each number is judged at the decimals you wrote it with: 0.71 must be the exact value "
                  "rounded to 2 decimals, 0.707 the exact value rounded to 3 (1.7705e44: to 5 significant digits).",
    "check.prec_decimals": "{d} decimals",
    "check.prec_decimal": "1 decimal",
    "check.prec_whole": "a whole number",
    "check.prec_digits": "{n} significant digits",
    "check.prec_digit": "1 significant digit",
    "check.conv_plain": "{step}, row {row}: you wrote $e^{s'}$ itself (the row's largest score is $m = {m}$); the "
                        "worked calculation shows $e^{s' - m}$ instead. Both are right: dividing by their sum gives "
                        "the same weights.",
    "check.conv_shifted": "{step}, row {row}: you wrote $e^{s' - m}$ with $m = {m}$, the row's largest score, as "
                          "the worked calculation does ($e^{s'}$ itself would be right as well).",
    "check.sec_conventions": "How you wrote the exponentials",
    "check.col_step": "step",
    "check.col_n": "answered",
    "check.col_correct": "correct",
    "check.col_rounding": "rounding",
    "check.col_carried": "carried",
    "check.col_wrong": "wrong",
    "check.col_blank": "empty",
    "check.where": "{step}, row {row}, column {col}",
    "check.where_entry": "{step}, entry {col}",
    "check.line_wrong": "{where}: you wrote {wrote}; correct to {prec}: {right} (exact {exact}).",
    "check.line_carried": "{where}: you wrote {wrote}; correct: {right} (exact {exact}). Not a new mistake: "
                          "it follows from your {sources} (from your own numbers it is {recomputed}).",
    "check.line_rounding": "{where}: you wrote {wrote}; exact {exact} ({right} to {prec}). Accepted: it "
                           "follows from your rounded {sources} (from your numbers: {recomputed}); keep more "
                           "decimals there.",
    "check.sec_wrong": "Wrong: new mistakes",
    "check.sec_carried": "Carried: they follow from an earlier mistake",
    "check.sec_rounding": "Accepted as rounding",
    "check.first_wrong_row": "The calculation first goes wrong at {step}, row {row}.",
    "check.first_wrong": "The calculation first goes wrong at {step}.",
    "check.only_carried": "Some numbers carry an earlier mistake.",
    "check.result_ok": "All correct: {correct} correct, {rounding} accepted as rounding.",
    "check.result_bad": "{wrong} wrong, {carried} carried, {correct} correct, {rounding} accepted as rounding.",
    # exercise -------------------------------------------------------------------------------
    "ex.title": "Exercise {seed}: self-attention by hand ({L} tokens, {d} dimensions)",
    "ex.solution_title": "Exercise {seed}: worked solution",
    "ex.intro": "Compute single-head self-attention by hand for these {L} tokens. Rows are tokens; "
                "$Q = X W_Q$, $K = X W_K$, $V = X W_V$ and $d_k = {d}$.",
    "ex.step_tasks": "tasks",
    "ex.task_1": "Compute $Q$, $K$ and $V$.",
    "ex.task_2": "Compute the raw scores $S = Q K^{\\top}$.",
    "ex.task_3": "Scale them: $S' = S / \\sqrt{d_k}$.",
    "ex.task_4": "Take $e^{s}$ of every scaled score and add up each row.",
    "ex.task_5": "Divide each exponential by its row sum: the softmax weights $A$.",
    "ex.task_6": "Compute the output $O = A V$: each row is a weighted sum of the rows of $V$.",
    "ex.decimals": "Write your numbers into the answers file and run attnscope check on it. Each number is "
                   "judged at the decimals you write, so write as many as you computed (4 is a good choice).",
    "ex.step_questions": "questions",
    "ex.q1": "Question 1. Why are the scores divided by $\\sqrt{d_k}$ before softmax?",
    "ex.q2": "Question 2. Softmax is two operations. Which, and what does each do?",
    "ex.q3": "Question 3. After the weighted sum, whose information does the new vector of {tok} contain?",
    "ex.step_answers": "answers to the questions",
    "ex.a1": "Answer 1. The variance of $q \\cdot k$ grows with $d_k$ (it equals $d_k$ for unit-variance entries; "
             "at BERT's $d_k = 64$ a sample gives {var}), and large scores make softmax almost one-hot, where "
             "the gradient vanishes. In this exercise, the scores of {tok} are {s}: without scaling softmax "
             "gives {p}; divided by $\\sqrt{{dk}} = {root}$ it gives {ps}, a softer row.",
    "ex.a2": "Answer 2. exp, then normalisation. exp makes every score positive and stretches the gaps: the "
             "scaled scores of {tok}, {s}, become {e}; a gap of {gap} turns into a ratio of {ratio}. "
             "Normalisation divides by the sum {sum}, so the weights {w} are positive and add up to 1.",
    "ex.a3": "Answer 3. Its weights: {shares}. So the new vector {o} (its own value was {v}, its input {x}) is "
             "mostly the value of {top}, mixed with the others' values in these shares.",
    "ex.file_comment1": "attnscope exercise {seed}: fill in your numbers (replace ~), then run: attnscope check <this file>",
    "ex.file_comment2": "Write as many decimals as you computed; leave ~ where you did not compute.",
    "ex.wrote": "Blank answers file written to {path}; fill it in and run: attnscope check {path}",
    "ex.kept": "{path} exists and was left as it is (it may hold your answers); check it with: attnscope check {path}",
    # multi-head by hand (explain/multihead.py) ---------------------------------------------------
    "mh.title": "Multi-head attention worked out by hand",
    "mh.title_named": "Multi-head attention worked out by hand: {name}",
    "mh.intro": "{L} tokens ({tokens}) of $d_{model} = {d}$ numbers each; {H} query heads, each with "
                "$d_{head} = {dh}$ query/key features and $d_v = {dv}$ value features. Every number below is "
                "computed exactly from the given numbers (the products) or to many more digits than shown, and "
                "only rounded for display.",
    "mh.intro_mha": "Each query head has its own key/value head ($n_{kv} = {Hkv}$: ordinary multi-head attention).",
    "mh.intro_gqa": "{Hkv} key/value heads, each shared by {group} query heads (grouped-query attention).",
    "mh.intro_why": "Each head is an attention of its own, with its own learned projections $W_Q^{(i)}$, "
                    "$W_K^{(i)}$, $W_V^{(i)}$ ($d_{model} \\times d_{head}$ each): the heads look at the same tokens "
                    "in different ways, and $W_O$ mixes what they found. In code the heads are not computed one "
                    "by one: one large product computes all of them, a re-indexing (view, transpose) separates "
                    "them, attention runs for all heads at once, and the heads are put side by side again.",
    "mh.conventions": "Column Q1.0 of a matrix is feature 0 of query head 1.",
    "mh.wqkv_caption": "W_QKV (learned): [W_Q | W_K | W_V] side by side, {cq} + {ck} + {cv} columns",
    "mh.step_fused": "one fused projection $[Q \\mid K \\mid V] = X W_{QKV}$",
    "mh.step_separate": "the projections $Q = X W_Q$, $K = X W_K$, $V = X W_V$, every head at once",
    "mh.fused_why": "All heads' queries, keys and values come out of one matrix product: the {n} columns of "
                    "$W_{QKV}$ are the {m} blocks $W_Q^{(i)}$, $W_K^{(g)}$, $W_V^{(g)}$ side by side. One large "
                    "product does exactly the multiplications of {m} small ones, in one call.",
    "mh.separate_why": "$W_Q$ holds the {H} heads' own projections side by side ({H} blocks of {dh} columns); "
                       "likewise $W_K$ and $W_V$. One product per matrix computes every head.",
    "mh.cols_caption": "columns: Qh.f = feature f of query head h (Kg.f, Vg.f: of key/value head g)",
    "mh.step_split": "into heads: view and transpose (no arithmetic)",
    "mh.split_why": "Column block $i$ of $Q$ becomes head $i$'s own matrix $Q^{(i)}$ ({L} × {dh}). view(L, H, "
                    "$d_{head}$) cuts each row into H pieces of $d_{head}$ numbers; transpose(0, 1) puts the head "
                    "index first, so that the attention of every head runs as one batched product.",
    "mh.no_arithmetic": "Nothing is computed here: every number keeps its value, only its place changes.",
    "mh.col_column": "column of {m}",
    "mh.col_part": "part",
    "mh.col_head": "head",
    "mh.col_feature": "feature",
    "mh.col_to": "goes to",
    "mh.split_caption": "where each column of {m} goes",
    "mh.kv_sharing": "K and V have fewer heads than Q: several query heads read the same key/value head (next step).",
    "mh.step_own": "each head on its own: $Q^{(i)} = X W_Q^{(i)}$",
    "mh.own_why": "$W_Q^{(i)}$ is head $i$'s block of columns of the learned $W_Q$. Head {h} computed alone, "
                  "with its own {wq} (columns {cols} of $W_Q$), reading all {d} features of every token:",
    "mh.col_wcols": "columns of W",
    "mh.col_diff": "largest |X·W⁽ⁱ⁾ − block|",
    "mh.own_caption": "each head computed alone with its own block of W, against its block of the fused product",
    "mh.own_same": "Every block is identical, entry for entry: the fused product is nothing but the heads' own "
                   "products side by side.",
    "mh.own_differs": "The blocks differ: the fused product is not the heads' products side by side.",
    "mh.not_a_slice": "Not a slice of the input: features {cols} of {tok} are {x}, but its query in head {h} is "
                      "{q}. Every head projects all the features of a token, through weights it learned.",
    "mh.step_head_qkv": "head {h}: its $q$, $k$, $v$",
    "mh.step_head": "head {h}: {title}",
    "mh.head_qkv": "Query head {h} takes columns {qc} of $Q$ and reads key/value head {g}: columns {kc} of $K$ "
                   "and {vc} of $V$. From here on, head {h} is ordinary single-head attention.",
    "mh.step_concat": "concatenation of the heads (no arithmetic)",
    "mh.concat_why": "The heads' outputs are put side by side again: transpose(0, 1) and reshape(L, $H \\cdot d_v$), "
                     "the inverse of the split.",
    "mh.col_from": "head output",
    "mh.col_concat": "columns of Concat",
    "mh.step_wo": "output projection $Y = \\mathrm{Concat}\\,W_O$",
    "mh.wo_why": "$W_O$ ({r} × {c}, learned) mixes the heads: each output feature reads the numbers of every "
                 "head. Split by heads, $Y = \\sum_i z^{(i)} W_O^{(i)}$, where $W_O^{(i)}$ are the {dv} rows of "
                 "$W_O$ that meet head $i$'s columns:",
    "mh.wo_share": "head {h}'s share (rows {rows} of W_O)",
    "mh.wo_sum": "Added up, the heads' shares give $Y$ exactly.",
    "mh.wo_sum_float": "Added up, the heads' shares give $Y$ (up to the last digit of float64).",
    "mh.step_meaning": "what the heads did",
    "mh.meaning_head": "Head {h}: {rows}.",
    "mh.meaning_row": "{tok} looks most at {top} ({pct})",
    "mh.meaning_even": "{tok} spreads its attention evenly ({pct} each)",
    "mh.meaning": "The same tokens get different weights in different heads: each head's learned $W_Q^{(i)}$ and "
                  "$W_K^{(i)}$ ask a question of their own. $W_O$ blends the {H} answers into one vector per token.",
    # relative positions in real rows: T5's bias buckets, encoder–decoder rows, DeBERTa's terms (helper D,
    # explain/row_relative.py) ---------------------------------------------------------------------------
    "rel.what_encoder": "encoder self-attention (source tokens attend to source tokens)",
    "rel.what_self": "decoder self-attention (causal: each target token attends to itself and the target tokens before it)",
    "rel.what_cross": "cross-attention (target tokens attend to the source: q from the decoder, k and v from the encoder's output)",
    "rel.title_seq2seq": "The row of {tok}: {what}, layer {layer}, head {head}, worked out",
    "rel.intro_seq2seq": "Model {model} ({family}): {what}. Layer {layer}, head {head} of {H}. Queries: {qtokens}. "
                         "Keys and values: {ktokens}. The query is {tok}; each head works with $d_k = {dk}$ dimensions. "
                         "q, k and v come from the model's trace (float32); everything after them is float64.",
    "rel.weights_check": "Recomputed in float64 from the model's weights ($W_Q$, $W_K$, $W_V$ applied to the traced "
                         "input of this attention), q, k and v differ from the traced ones by at most {dq}, {dk} and {dv}.",
    "rel.step_bias": "T5's relative position bias: distance → bucket → learned bias",
    "rel.bias_rule_bi": "The encoder's bias is bidirectional: of its {nb} buckets, {n} are for keys at or before "
                        "the query and {n} for keys after it (offset {n} when $\\delta > 0$). On each side, a distance "
                        "$d = |\\delta|$ below $e = {e}$ has a bucket of its own; farther ones share logarithmic "
                        "buckets up to $D = {D}$: bucket $= e + \\lfloor \\mathrm{ln}(d/e) / \\mathrm{ln}(D/e) \\cdot {rest} \\rfloor$, "
                        "at most {last}. The query is {tok}.",
    "rel.bias_rule_causal": "The decoder's bias is causal: keys after the query are hidden anyway, so all {nb} buckets "
                            "are for distances $d = \\max(-\\delta, 0)$ back. A distance below $e = {e}$ has a bucket of "
                            "its own; farther ones share logarithmic buckets up to $D = {D}$: bucket $= e + \\lfloor "
                            "\\mathrm{ln}(d/e) / \\mathrm{ln}(D/e) \\cdot {rest} \\rfloor$, at most {last}. The query is {tok}.",
    "rel.bias_float32": "The model computes these logarithms in float32, and so does this table, so that a distance "
                        "on a bucket edge lands in the model's bucket.",
    "rel.bias_table": "Head {head}'s learned bias, one number per bucket: the stack's table, learned in its first "
                      "layer and added by every layer (layer {layer} adds the same numbers as layer 0). "
                      "$\\mathrm{ln}(D/e) = \\mathrm{ln}({D}/{e})$ = {span}.",
    "rel.bias_check": "The model's own bias (float32) differs from this lookup by {diff}.",
    "rel.col_delta": "$\\delta = j - i$",
    "rel.col_offset": "offset",
    "rel.col_distance": "distance $d$",
    "rel.col_log_ratio": "ln(d / e)",
    "rel.col_log_scaled": "÷ ln(D / e) × (n − e)",
    "rel.col_bucket": "bucket",
    "rel.col_bias": "bias $b$",
    "rel.col_qk": "$q \\cdot k$",
    "rel.step_scores": "raw scores $s_j$",
    "rel.raw_encoder": "The query vector of {tok} against the key vector of every source token (T5 adds each key's bias).",
    "rel.raw_self": "The query vector of {tok} against the key vector of every target token (T5 adds each key's bias).",
    "rel.raw_cross": "The query vector of the target token {tok} (from the decoder) against the key vector of every "
                     "source token (from the encoder's output); cross-attention adds no position bias.",
    "rel.scale_t5": "T5 does not divide by $\\sqrt{d_k} = \\sqrt{{dk}}$ = {root}: its factor is 1. The scaling is "
                    "folded into the initialisation of $W_Q$ (standard deviation $(d_{model} d_k)^{-1/2}$ where $W_K$ "
                    "gets $d_{model}^{-1/2}$): the second article's T5-style alternative, in a real model.",
    "rel.trace_check": "Compared with the model's own float32 numbers: largest difference {ds} in $q \\cdot k$, {dw} "
                       "in the probabilities, {dz} in the output vector.",
    "rel.title_deberta": "The row of {tok}: DeBERTa's three score terms, layer {layer}, head {head}, worked out",
    "rel.intro_deberta": "Model {model} (DeBERTa), layer {layer}, head {head} of {H}; the text has {L} tokens: {tokens}. "
                         "The query is {tok}; each head works with $d_k = {dk}$ dimensions. DeBERTa scores a pair of "
                         "tokens with three terms: content to content, content to position and position to content. "
                         "q, k and v come from the model's trace; the relative embeddings and their projections are "
                         "computed from the model's weights; everything is float64.",
    "rel.step_positions": "relative positions and their buckets",
    "rel.pos_rule_log": "$r = i - j$. Distances up to {mid} keep their value; farther ones go on a log scale: "
                        "$\\delta = \\mathrm{sign}(r) \\cdot (\\mathrm{ceil}(\\mathrm{ln}(|r|/{mid}) / \\mathrm{ln}({maxp}/{mid}) \\cdot {mid1} "
                        ") + {mid})$. The content-to-position term reads row clip($\\delta(i, j)$ + {span}, 0, {last}) "
                        "of pos_k; the position-to-content term reads row clip($-\\delta(j, i)$ + {span}, 0, {last}) of "
                        "pos_q.",
    "rel.pos_rule_plain": "$r = i - j$, without buckets. The content-to-position term reads row clip($r$ + {span}, 0, "
                          "{last}) of pos_k; the position-to-content term reads row clip($-r(j, i)$ + {span}, 0, {last}) "
                          "of pos_q: distances beyond ±{span} share the last rows.",
    "rel.pos_embed": "The relative embeddings ({rows} rows of {d} numbers) belong to the stack and are shared by "
                     "every layer; pos_k and pos_q are those rows projected by {proj}. {normed}",
    "rel.proj_shared": "the layer's own $W_K$ and $W_Q$ (share_att_key)",
    "rel.proj_separate": "the layer's pos_key_proj and pos_query_proj",
    "rel.normed": "The rows are LayerNorm'ed first (norm_rel_ebd).",
    "rel.col_dlog_ratio": "ln(|r| / mid)",
    "rel.col_dlog_scaled": "÷ ln(max / mid) × (mid − 1)",
    "rel.not_normed": "",
    "rel.col_r": "$r = i - j$",
    "rel.col_rel_bucket": "bucket $\\delta$",
    "rel.col_idx_c2p": "c2p row",
    "rel.col_idx_p2c": "p2c row",
    "rel.col_c2c": "c2c = $q \\cdot k_j$",
    "rel.col_c2p": "c2p = $q \\cdot$ pos_k",
    "rel.col_p2c": "p2c = $k_j \\cdot$ pos_q",
    "rel.scores_deberta": "For {tok}: c2c = q·k_j (content to content), c2p = q · pos_k[row] (the query's content "
                          "against where the key is relative to it), p2c = k_j · pos_q[row] (the key's content against "
                          "where the query is relative to it). The raw score is their sum.",
    "rel.scale_deberta": "DeBERTa divides the sum of its {m} terms by $\\sqrt{{m} \\cdot d_k} = \\sqrt{{md}}$ = {root} "
                         "instead of $\\sqrt{d_k}$: each term has a variance of about $d_k$, their sum about {m} times "
                         "that. Factor $c$ = {c}.",
    "rel.terms_check": "The model's own float32 terms differ from these by at most {d1} (c2c), {d2} (c2p) and {d3} "
                       "(p2c); its probabilities by {dw}, its output vector by {dz}.",
    # explain positions (explain/positions_worked.py, positions_relative.py) ----------------------
    "pos.title_sin": "Sinusoidal positions worked out: position {p}, dimension {dim}",
    "pos.sin_intro": "The sinusoidal encoding (Vaswani et al. 2017) of position {p} in $d_{model} = {d}$ dimensions, "
                     "and why the encoding of position {pk} = {p} + {k} is a rotation of it. The encoding is added to "
                     "the token's embedding; nothing in it is learned.",
    "pos.sin_why": "Dimensions $2i$ and $2i + 1$ are the sine and cosine of the same angle $p \\cdot \\omega_i$. The "
                   "frequencies fall geometrically from $\\omega_0 = 1$ (one turn every $2\\pi \\approx 6.28$ positions) "
                   "to {slow} for the last pair, $i = {n}$ (one turn every {longest} positions), so near and far "
                   "positions both differ somewhere.",
    "pos.q_pair": "pair",
    "pos.q_exponent": "exponent",
    "pos.q_power": "base to that power",
    "pos.q_freq": "frequency $\\omega_i$ (radians per position)",
    "pos.q_angle": "angle (radians)",
    "pos.q_value": "the encoding",
    "pos.q_theta": "speed $\\theta_i$ (radians per position)",
    "pos.step_dim": "dimension {dim} of position {p}, every number",
    "pos.dim_why_sin": "Dimension {dim} is even: the sine of pair $i = {i}$.",
    "pos.dim_why_cos": "Dimension {dim} is odd: the cosine of pair $i = {i}$.",
    "pos.col_quantity": "quantity",
    "pos.col_formula": "formula",
    "pos.col_value": "value",
    "pos.wavelength": "Pair {i} repeats every $2\\pi / \\omega_i = {w}$ positions.",
    "pos.col_pair": "pair $i$",
    "pos.col_dims": "dimensions",
    "pos.pairs_caption": "{n} of the {m} pairs (the first, the chosen one, the last)",
    "pos.step_vector": "the whole vector PE({p})",
    "pos.step_rotation": "PE({pk}) is PE({p}) turned: a rotation per pair that depends on $k = {k}$ only",
    "pos.rot_why": "By the angle-sum formulas, $\\sin((p+k)\\omega) = \\sin p\\omega \\cos k\\omega + \\cos p\\omega "
                   "\\sin k\\omega$ and $\\cos((p+k)\\omega) = \\cos p\\omega \\cos k\\omega - \\sin p\\omega \\sin k"
                   "\\omega$: each (sin, cos) pair of PE(p) is multiplied by a 2×2 rotation matrix whose entries "
                   "contain $k$ and $\\omega$, never $p$.",
    "pos.rot_caption": "the matrix of pair {i} for k = {k} (angle $k\\,\\omega = {a}$)",
    "pos.rot_direct": "Computed directly, PE({pk}) has the same pair: [{a}, {b}].",
    "pos.col_rot_sin": "M·PE(p): sin",
    "pos.col_rot_cos": "M·PE(p): cos",
    "pos.rot_result": "Over every pair the turned PE(p) and PE(p + {k}) differ by at most {diff} (float64 rounding).",
    "pos.col_from": "from $p$",
    "pos.col_to": "to $p + k$",
    "pos.col_same_matrix": "largest difference of the matrices",
    "pos.col_rot_diff": "largest |M·PE(p) − PE(p+k)|",
    "pos.same_caption": "the same matrices (k = {k}) from other positions",
    "pos.dot_why": "So the dot product of two encodings depends on the distance only: $PE(p) \\cdot PE(p+k) = "
                   "\\sum_i \\cos(k\\,\\omega_i) = {s}$ for every $p$ (k = {k}):",
    "pos.step_meaning": "what this means",
    "pos.sin_meaning": "A shift by {k} positions is one fixed linear map of the encoding, the same everywhere in the "
                       "text. A layer that multiplies by learned matrices ($W_Q$, $W_K$) can therefore learn to "
                       "attend to \"the token {k} places back\" wherever the tokens stand.",
    "pos.title_rope": "Rotary positions worked out: position {p}, pair {i}",
    "pos.rope_intro": "Rotary positions (RoFormer, Su et al. 2021) turn each head's q and k, $d_k = {d}$ features in "
                      "pairs, by an angle proportional to the position (base {base}); nothing is added to the "
                      "embeddings. Below: position {p}, then position {pk} = {p} + {k}.",
    "pos.rope_intro_model": "The rotation of model {model}, layer {layer}: each head's q and k ($d_k = {d}$ features) "
                            "turned in pairs, by an angle proportional to the position. Below: position {p}, then "
                            "position {pk} = {p} + {k}.",
    "pos.rope_why": "Where sinusoidal positions add a vector to the embedding, rotary ones rotate q and k, so that "
                    "the score $q'_m \\cdot k'_n$ depends on $m - n$ only.",
    "pos.step_rope_pair": "pair {i} at position {p}, every number",
    "pos.rope_pair": "Feature {dim} belongs to pair {i}: features {fa} and {fb}, turned together.",
    "pos.rope_default_x": "The vector turned here has (1, 0) in every pair, so that the turned vector reads "
                          "(cos φ, sin φ) pair by pair: the rotary counterpart of PE(p). Give your own q with --vector.",
    "pos.step_rope_compose": "turning to {pk} is turning to {p} and then by {k}",
    "pos.rope_compose": "Rotations add their angles: $R((p+k)\\theta_i) = R(k\\theta_i)\\,R(p\\theta_i)$. For pair {i}, "
                        "p = {p}, k = {k}:",
    "pos.col_features": "features",
    "pos.col_compose_diff": "largest |R(kθ)R(pθ) − R((p+k)θ)|",
    "pos.rope_compose_result": "Every pair agrees to {diff} (float64 rounding): the turn by {k} is the same matrix "
                               "at every position.",
    "pos.rope_meaning": "In $q'_m \\cdot k'_n = q^\\top R(m\\theta)^\\top R(n\\theta)\\,k = q^\\top R((n-m)\\theta)\\,k$ "
                        "the absolute positions cancel: a head sees how far apart two tokens are, not where they are.",
    "pos.title_t5": "T5 relative positions worked out: distance {d}",
    "pos.t5_intro": "T5's relative position bias (Raffel et al. 2020): no vector per position; the distance "
                    "$\\delta$ = key position − query position goes into a bucket, and each head adds a learned "
                    "number per bucket to its raw scores (T5 does not divide by $\\sqrt{d_k}$).",
    "pos.t5_intro_model": "The relative position bias of model {model}: the distance $\\delta$ = key position − query "
                          "position goes into a bucket, and each head adds a learned number per bucket to its raw scores.",
    "pos.t5_rule_bi": "Bidirectional (the encoder): of the {nb} buckets, {n} are for keys before the query (and the "
                      "query itself), {n} for keys after it. In each half, distances below {exact} have a bucket "
                      "each; farther ones share buckets on a log scale up to {md}, beyond which all land in the "
                      "last one.",
    "pos.t5_rule_causal": "Causal (decoder self-attention): only keys before the query count; all {n} of the {nb} "
                          "buckets are for them. Distances below {exact} have a bucket each; farther ones share "
                          "buckets on a log scale up to {md}, beyond which all land in the last one.",
    "pos.step_t5_bucket": "the bucket of $\\delta = {d}$, every number",
    "pos.t5_float32": "The logs are float32, as T5 computes them, so that a distance on a bucket edge lands where "
                      "the model puts it.",
    "pos.q_delta": "distance",
    "pos.q_side": "offset (keys after the query)",
    "pos.q_distance": "distance counted",
    "pos.q_exact": "exact buckets",
    "pos.q_small": "below that: its own bucket",
    "pos.q_log_ratio": "log of the distance",
    "pos.q_log_span": "log of the span",
    "pos.q_scaled": "position on the log scale",
    "pos.q_large": "log bucket",
    "pos.q_bucket": "bucket",
    "pos.t5_result": "Query {i}, key {j}: $\\delta = {d}$ is bucket {b}.",
    "pos.t5_future": "A key after the query ($\\delta = {d} > 0$) counts as distance 0 here; in decoder "
                      "self-attention the causal mask hides it anyway.",
    "pos.step_t5_bias": "the learned bias of bucket {b}, every head",
    "pos.t5_bias": "What {model} adds to the raw score of such a pair: row {b} of the {stack}'s learned table, one "
                   "number per head ({H} heads); every layer of the stack adds the same numbers.",
    "pos.stack_encoder": "encoder",
    "pos.stack_decoder": "decoder",
    "pos.col_head": "head",
    "pos.col_bias": "bias",
    "pos.step_t5_table": "every distance and its bucket",
    "pos.t5_table_why": "Each bucket with the distances it holds (the table runs from −2·{md} to 2·{md}): near "
                        "distances are told apart exactly, far ones only roughly.",
    "pos.col_bucket": "bucket",
    "pos.col_delta_from": "$\\delta$ from",
    "pos.col_delta_to": "$\\delta$ to",
    "pos.col_count": "distances",
    "pos.step_t5_relative": "relative: the same distance, the same bucket",
    "pos.t5_relative": "Wherever the two tokens stand, $\\delta = {d}$ gives bucket {b}, and every head adds the same "
                       "learned bias to that score:",
    "pos.col_query": "query",
    "pos.col_key": "key",
    "pos.t5_meaning": "The bias depends on the distance only, never on the absolute positions; each layer of a stack "
                      "adds the same bias matrix (computed once in its first layer).",
}
