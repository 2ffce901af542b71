"""The English labels of :mod:`.i18n`."""

EN = {
    # rendering ---------------------------------------------------------------------------------
    "step_n": "Step {n}: {title}",
    "warning": "Note:",
    "list_sep": ", ",
    "latex.compile": "compile with xelatex when the text has Chinese characters (xeCJK)",
    "latex.compile_pdf": "compile with pdflatex (or xelatex, lualatex)",
    "latex.compile_xe": "compile with xelatex: pdflatex cannot set these characters:",
    "latex.compile_cjk": "compile with xelatex: the text has Chinese characters (xeCJK)",
    "latex.fragment": "a fragment: paste it into a document whose preamble has",
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
    "row.char_span": "{tok} spans {n} byte pieces, positions {first}–{last} (bytes {hex}); the row is the last "
                      "of them, position {pos}: under a causal mask only that piece has read every byte (a "
                      "character is labelled on the piece that completes it, the pieces before end with …; "
                      "pass a position to choose another).",
    "row.step_raw": "raw scores $s_j = q \\cdot k_j$",
    "row.raw_why": "The query vector of {tok} against the key vector of every token (the model's $Q K^{\\top}$ row).",
    "row.raw_given": "The given raw scores of {tok} against every key.",
    "row.scale_factor": "Multiply by the model's factor $c = {c}$.",
    "row.masked": "Keys {keys} are masked ($-\\infty$): they get $e^{-\\infty} = 0$ and weight 0.",
    "row.exp_shift": "The largest score is above {limit}, so $e^{s'}$ would be huge. The column shows "
                     "$e^{s' - m}$ with $m = {m}$ (the largest score): numerator and denominator are both divided "
                     "by $e^{m}$, so the probabilities are the same.",
    "row.step_bias": "position bias $b_j$ added to the scaled scores",
    "row.bias_why": "The position scheme {scheme} adds a term $b_j$ of head {head} to the scaled score of each key "
                    "(the softmax works on $s'_j + b_j$):",
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
    "col.bias": "bias $b$",
    "col.biased": "$s' + b$",
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
    "check.class_student": "student",
    "check.class_first": "first mistake",
    "check.class_status": "status",
    "check.class_row": "{step}, row {row}",
    "check.class_key": "✓ all right · ✗n new mistakes · ↪n carried from an earlier slip · ∅n left empty (missing)",
    "check.status_ok": "ok",
    "check.status_new": "new mistake",
    "check.status_carried": "carried only",
    "check.status_missing": "missing",
    "check.status_error": "error",
    "check.missing": "{missing} entries are empty ({where}): an empty answer counts as missing, not as right.",
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
    "ex.file_comment2": "Write as many decimals as you computed. A ~ left in counts as missing; delete a step's line to skip that step.",
    "ex.wrote": "Blank answers file written to {path}; fill it in and run: attnscope check {path}",
    "ex.kept": "{path} exists and was left as it is (it may hold your answers); check it with: attnscope check {path}",
}
