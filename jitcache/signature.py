"""The parameter list of a C/C++ function definition, read from source text, and what an edit
changed in it: the JIT backdoor's check that an edited source is still called correctly."""
from __future__ import annotations

import re
from difflib import SequenceMatcher

from .errors import BackdoorError

# comments and string/char literals: blanked before searching, so that text inside them
# (a message naming the function, a parenthesis) is never taken for code
_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# qualifiers that do not change how an argument is passed: editing them is allowed
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__"}
_WORD = re.compile(r"[A-Za-z_]\w*|\*|&|\[|\]|[^\sA-Za-z_*&\[\]]+")


def _blank(text: str) -> str:
    return _NOISE.sub(lambda m: " " * len(m.group(0)), text)


def _closing(text: str, start: int) -> int:
    """Index of the parenthesis closing the one at ``start`` (-1 if it never closes)."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def parameter_text(source: str, function: str) -> str | None:
    """The text between the parentheses of ``function``'s definition (None: not defined)."""
    code = _blank(source)
    for m in re.finditer(rf"(?<![\w.>]){re.escape(function)}\s*\(", code):
        end = _closing(code, m.end() - 1)
        if end >= 0 and code[end + 1:].lstrip().startswith("{"):
            return code[m.end():end]
    return None


def _split(params: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in params:
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(ch, 0)
        cur.append(ch)
    out.append("".join(cur))
    return [p for p in (" ".join(s.split()) for s in out) if p and p != "void"]


def parameters(source: str, function: str) -> list[tuple[str, str, str]] | None:
    """``function``'s parameters as (type, name, declaration as written, whitespace
    normalised); the type leaves out qualifiers that do not change the call (const, restrict)."""
    text = parameter_text(source, function)
    if text is None:
        return None
    out = []
    for decl in _split(text):
        words = _WORD.findall(decl)
        names = [w for w in words if re.fullmatch(r"[A-Za-z_]\w*", w)]
        name = names[-1] if len(names) > 1 else ""
        kept = [w for w in words if w not in _QUALIFIERS]
        if name:
            kept.remove(name)
        out.append((" ".join(kept).replace(" *", "*").replace(" [", "["), name, decl))
    return out


def _show(i: int, p) -> str:
    return f"parameter {i + 1} `{p[2]}`"


def _renames(generated, edited, old, new, block) -> dict:
    """In a replaced block of equal length, positions whose name alone changed: i -> j."""
    tag, i1, i2, j1, j2 = block
    if tag != "replace" or i2 - i1 != j2 - j1:
        return {}
    return {i: j for i, j in zip(range(i1, i2), range(j1, j2))
            if generated[i][1] not in new and edited[j][1] not in old}


def changes(generated: list, edited: list) -> list[str]:
    """What turned ``generated`` into ``edited``, one phrase per change, by position and name."""
    old = {p[1]: i for i, p in enumerate(generated)}
    new = {p[1]: j for j, p in enumerate(edited)}
    matcher = SequenceMatcher(None, [p[1] for p in generated], [p[1] for p in edited],
                              autojunk=False)
    out = []
    for block in matcher.get_opcodes():
        tag, i1, i2, j1, j2 = block
        renames = _renames(generated, edited, old, new, block)
        for i in range(i1, i2):
            p = generated[i]
            j = i - i1 + j1 if tag == "equal" else renames.get(i, new.get(p[1]))
            if j is None:
                out.append(f"{_show(i, p)} removed")
                continue
            if i in renames:
                out.append(f"{_show(i, p)} renamed to `{edited[j][1]}`")
            elif tag != "equal":
                out.append(f"{_show(i, p)} moved to position {j + 1}")
            if edited[j][0] != p[0]:
                out.append(f"{_show(i, p)} retyped to `{edited[j][2]}`")
        done = set(renames.values())
        out += [f"parameter {j + 1} `{edited[j][2]}` added" for j in range(j1, j2)
                if j not in done and edited[j][1] not in old]
    return out


def check(generated: str, edited: str, function: str, path) -> None:
    """Raise BackdoorError if ``edited`` (the file at ``path``) declares ``function`` with
    parameters other than ``generated`` does; edits of its body are allowed."""
    want = parameters(generated, function)
    if want is None:
        return  # the generated source names no such definition: nothing to compare with
    shown = f"{function}({', '.join(p[2] for p in want)})"
    got = parameters(edited, function)
    if got is None:
        raise BackdoorError(
            f"the JIT backdoor's edited source {path} no longer defines the entry point "
            f"`{function}`, which the caller runs with the generated arguments. Keep its "
            f"definition, `{shown}`, and edit only its body, or unset "
            "STENCILGEN_JIT_BACKDOOR (or delete the file) to use the generated code.",
            source_path=str(path))
    diff = changes(want, got)
    if diff:
        raise BackdoorError(
            f"the JIT backdoor's edited source {path} changed the parameters of the entry "
            f"point `{function}`: {'; '.join(diff)}. The caller passes the generated "
            "arguments in the generated order, so this edit would run with wrong arguments. "
            f"Restore the declaration `{shown}` (qualifiers such as const and restrict may "
            "change) and edit only the body, or unset STENCILGEN_JIT_BACKDOOR (or delete "
            "the file) to use the generated code.", source_path=str(path))
