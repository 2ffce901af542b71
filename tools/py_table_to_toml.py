"""Convert a Python string table (a module with EN and ZH dicts, or dicts merged with ``**``) into a
catalogue file of attnscope/i18n/catalog/: one TOML table per key with en and zh side by side.
The comments above a key in the EN dict are kept above its entry. Usage:

    python tools/py_table_to_toml.py src/attnscope/i18n/strings_errors.py > src/attnscope/i18n/catalog/errors.toml
    python tools/py_table_to_toml.py EN_MODULE.py ZH_MODULE.py > FILE.toml   # the languages in two modules
"""

import ast
import json
import sys


def _dict(tree, name):
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and isinstance(node.value, ast.Dict):
                return node.value
    raise SystemExit(f"no literal dict {name}")


def _value(node):
    return ast.literal_eval(node)


def convert(path: str, zh_path: str = "") -> str:
    """``path``'s EN and ZH dicts (ZH from ``zh_path`` where the languages are two modules)."""
    src = open(path, encoding="utf-8").read()
    lines = src.splitlines()
    tree = ast.parse(src)
    en = _dict(tree, "EN")
    zh = _dict(ast.parse(open(zh_path, encoding="utf-8").read()) if zh_path else tree, "ZH")
    if any(k is None for k in en.keys + zh.keys):
        raise SystemExit(f"{path}: a table merges another with ** (convert that one first)")
    zh_map = {_value(k): _value(v) for k, v in zip(zh.keys, zh.values)}
    doc = ast.get_docstring(tree) or ""
    out = ["# " + line if line else "#" for line in doc.splitlines()] + [f"# (converted from {path.split('src/')[-1]})", ""]
    prev_end = en.lineno
    for k, v in zip(en.keys, en.values):
        comments = [ln.strip() for ln in lines[prev_end:k.lineno - 1] if ln.strip().startswith("#")]
        out += [""] + comments
        key = _value(k)
        out += [f"[{json.dumps(key, ensure_ascii=False)}]",
                f"en = {json.dumps(_value(v), ensure_ascii=False)}",
                f"zh = {json.dumps(zh_map.pop(key), ensure_ascii=False)}"]
        prev_end = v.end_lineno
    if zh_map:
        raise SystemExit(f"{path}: ZH has keys EN lacks: {sorted(zh_map)}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(convert(*sys.argv[1:3]))
