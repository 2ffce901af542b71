"""The command line's error messages (:mod:`attnscope.cli`), in English and Chinese.

The English strings are the exact words the commands raise: each raise site builds its error
with :func:`attnscope.i18n.error` from a key here, and the command line writes it in ``--lang``
from the key. The ``cli.argparse_*`` strings are argparse's own words, which
:class:`attnscope.cli.Parser` reads back with :func:`attnscope.i18n.translate`.
docs/guide/languages.md lists them.
"""

EN = {
    # the line around every message
    "cli.error": "attnscope {command}: error: {message}",
    "cli.error_top": "attnscope: error: {message}",
    "cli.file_not_found": "file not found: {name}",
    "cli.interrupted": "interrupted",
    # option values (attnscope.cli.IntRange, check_range)
    "cli.int_range": "{flag} must be an integer from {low} to {high}, got {value}",
    "cli.range": "{flag} must be from {low} to {high}, got {value}",
    "cli.at_least": "{flag} must be at least {low}, got {value}",
    "cli.int_list_empty": "{flag} is empty: give comma-separated integers, each from {low} to {high}",
    "cli.int_list": "{flag} must be comma-separated integers, each from {low} to {high}, got {value}",
    "cli.int_twice": "{flag} lists {value} twice; give each once",
    # output files and folders
    "cli.exists": "{flag} {path} already exists; add --overwrite to replace it, or choose another name",
    "cli.results_there": "{flag} {path} already holds results ({names}); add --overwrite to replace them, or "
                         "choose another folder",
    "cli.out_not_folder": "--out {path} exists and is not a folder",
    "cli.cannot_write": "cannot write {path}: {why}",
    "cli.o_empty": "-o is empty; give a file name such as scores.png",
    "cli.o_folder": "-o {path} is a folder; give a file name such as {example}",
    "cli.format": "cannot tell the format of {name}: use a .png, .svg or .pdf file name",
    # plot's inputs
    "cli.needs_text": "--kind {kind} needs a text to trace",
    "cli.labels_kind": "--labels names the tokens of --kind heatmap or softmax, not of --kind {kind}",
    "cli.labels_empty": "--labels has an empty label: {value}",
    "cli.numbers": "{what} must be comma-separated numbers, got {value}",
    "cli.numbers_empty": "{what} is empty: give comma-separated numbers",
    "cli.numbers_finite": "{what} must be finite numbers, got {value}",
    "cli.labels_count": "labels has {n} entries but the text has {m} tokens",
    "cli.labels_count_one": "labels has {n} entry but the text has {m} tokens",
    # devices
    "cli.no_cuda": "{flag} {device}: no CUDA GPU is visible; use --device cpu",
    "cli.no_cuda_build": "{flag} {device}: this torch is built without CUDA; use --device cpu",
    "cli.not_device": "{flag}: {device} is not a device; use cpu, cuda, cuda:N or mps",
    # argparse's own messages (Python's words, read back by attnscope.cli.Parser)
    "cli.argparse_choice": "argument {arg}: invalid choice: {value} (choose from {choices})",
    "cli.argparse_required": "the following arguments are required: {args}",
    "cli.argparse_invalid": "argument {arg}: invalid {type} value: {value}",
    "cli.argparse_unrecognized": "unrecognized arguments: {args}",
    "cli.argparse_one": "argument {arg}: expected one argument",
    "cli.argparse_with": "argument {arg}: not allowed with argument {other}",
}

ZH = {
    "cli.error": "attnscope {command}：错误：{message}",
    "cli.error_top": "attnscope：错误：{message}",
    "cli.file_not_found": "找不到文件：{name}",
    "cli.interrupted": "已中断",
    "cli.int_range": "{flag} 必须是 {low} 到 {high} 之间的整数，收到的是 {value}",
    "cli.range": "{flag} 必须在 {low} 到 {high} 之间，收到的是 {value}",
    "cli.at_least": "{flag} 必须至少为 {low}，收到的是 {value}",
    "cli.int_list_empty": "{flag} 是空的：请给出以逗号分隔的整数，每个在 {low} 到 {high} 之间",
    "cli.int_list": "{flag} 必须是以逗号分隔的整数，每个在 {low} 到 {high} 之间，收到的是 {value}",
    "cli.int_twice": "{flag} 把 {value} 列了两次；每个只写一次",
    "cli.exists": "{flag} {path} 已经存在；加上 --overwrite 覆盖它，或换一个名字",
    "cli.results_there": "{flag} {path} 里已有结果（{names}）；加上 --overwrite 覆盖它们，或换一个文件夹",
    "cli.out_not_folder": "--out {path} 已存在，但不是文件夹",
    "cli.cannot_write": "无法写入 {path}：{why}",
    "cli.o_empty": "-o 是空的；请给出文件名，例如 scores.png",
    "cli.o_folder": "-o {path} 是一个文件夹；请给出文件名，例如 {example}",
    "cli.format": "看不出 {name} 的格式：请用 .png、.svg 或 .pdf 文件名",
    "cli.needs_text": "--kind {kind} 需要一段要追踪的文本",
    "cli.labels_kind": "--labels 为 --kind heatmap 或 softmax 的 token 命名，不能用于 --kind {kind}",
    "cli.labels_empty": "--labels 里有一个空标签：{value}",
    "cli.numbers": "{what} 必须是以逗号分隔的数，收到的是 {value}",
    "cli.numbers_empty": "{what} 是空的：请给出以逗号分隔的数",
    "cli.numbers_finite": "{what} 必须是有限的数，收到的是 {value}",
    "cli.labels_count": "给出的标签有 {n} 个，但文本有 {m} 个 token",
    "cli.labels_count_one": "给出的标签有 {n} 个，但文本有 {m} 个 token",
    "cli.no_cuda": "{flag} {device}：看不到 CUDA GPU；请用 --device cpu",
    "cli.no_cuda_build": "{flag} {device}：这个 torch 没有编译 CUDA 支持；请用 --device cpu",
    "cli.not_device": "{flag}：{device} 不是设备；请用 cpu、cuda、cuda:N 或 mps",
    "cli.argparse_choice": "参数 {arg}：无效的选项 {value}（可选：{choices}）",
    "cli.argparse_required": "缺少必需的参数：{args}",
    "cli.argparse_invalid": "参数 {arg}：无效的 {type} 值：{value}",
    "cli.argparse_unrecognized": "无法识别的参数：{args}",
    "cli.argparse_one": "参数 {arg}：需要一个值",
    "cli.argparse_with": "参数 {arg}：不能与参数 {other} 一起使用",
}
