"""Shell completion for `vllm-preflight` and `kubectl vllm-preflight`, from their parsers.

    vllm-preflight completion bash > ~/.local/share/bash-completion/completions/vllm-preflight
    vllm-preflight completion zsh  > "${fpath[1]}/_vllm-preflight"
    vllm-preflight completion fish > ~/.config/fish/completions/vllm-preflight.fish
    kubectl_complete-vllm_preflight ARGS... WORD   (kubectl runs it: `kubectl vllm-preflight <TAB>`)

Why generated, not written: the flags live in five argparse parsers (check, lint, operator,
the plugin and its audit); a hand-written script goes stale the day a flag is added. The
parsers are read into a small tree (`Command`, `Option`: pure data), and each shell's
script is rendered from that tree, so a new flag completes without touching this file.
No third-party completion library: the tree is all any of the three shells needs.

Why static scripts for the shells: a completion that starts Python on every <TAB> costs
the Python start (about 0.1 s here) per key press; the rendered script answers in the
shell. kubectl's plugin completion is dynamic by design (kubectl runs the executable
`kubectl_complete-<plugin>` with the words typed so far and reads one candidate per line,
then `:<cobra directive>`: kubectl's pkg/cmd/plugin/plugin_completion.go), so for the
plugin `complete_words()` walks the same tree in Python.

The parsers are imported by module name (like `vllm-preflight`'s own dispatch in
cli/__init__.py): `check`'s lives in preflight_check, which the operator's packages never
import statically (import-linter contract 3), yet ships in the same wheel.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from preflight_operator import __version__

SHELLS = ("bash", "zsh", "fish")
# Where each subcommand's parser is built: module, function. Imported only when asked.
CLI_PARSERS: dict[str, tuple[str, str]] = {
    "check": ("preflight_check.options", "build_parser"),
    "lint": ("preflight_operator.cli.lint", "_parser"),
    "operator": ("preflight_operator.runtime.options", "build_parser"),
}
PLUGIN_DELEGATES: dict[str, tuple[str, str]] = {
    "lint": ("preflight_operator.cli.lint", "_parser"),
    "audit": ("preflight_operator.cli.audit", "_parser"),
}
# A value that names a file or directory: completed with the shell's file completion.
_PATHLIKE = re.compile(r"FILE|DIR|PATH|CONFIG|KUBECONFIG", re.IGNORECASE)
# cobra's ShellCompDirective values (spf13/cobra completions.go), as kubectl reads them.
DIRECTIVE_DEFAULT = 0  # the shell's file completion when nothing matches
DIRECTIVE_NO_FILE = 4


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    takes_value: bool
    choices: tuple[str, ...] = ()
    files: bool = False  # its value is a path
    help: str = ""


@dataclass(frozen=True)
class Command:
    name: str
    help: str = ""
    options: tuple[Option, ...] = ()
    subcommands: tuple[Command, ...] = ()
    files: bool = False  # its positional arguments are paths
    words: tuple[str, ...] = ()  # fixed positional values (choices)
    children: dict[str, Command] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.children.update({sub.name: sub for sub in self.subcommands})

    def option(self, flag: str) -> Option | None:
        return next((o for o in self.options if flag in o.flags), None)


def _pathlike(action: argparse.Action) -> bool:
    if any(_PATHLIKE.search(n) for n in (str(action.metavar or ""), action.dest)):
        return True
    return getattr(action.type, "__name__", "") in ("Path", "FileType")


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split()).replace("%(default)s", "")[:120]


def command_of(
    parser: argparse.ArgumentParser,
    name: str,
    help_text: str = "",
    replace: dict[str, argparse.ArgumentParser] | None = None,
) -> Command:
    """The tree of one argparse parser. `replace` swaps the parser of a subcommand that
    only forwards its arguments (the plugin's `lint` and `audit`, add_help=False) for the
    parser that really reads them."""
    options: list[Option] = []
    subcommands: list[Command] = []
    files = False
    words: tuple[str, ...] = ()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: str(a.help or "") for a in action._choices_actions}
            for sub_name, sub_parser in action.choices.items():
                real = (replace or {}).get(sub_name) or sub_parser
                subcommands.append(command_of(real, sub_name, helps.get(sub_name, "")))
        elif action.option_strings:
            takes_value = action.nargs != 0
            choices = tuple(str(c) for c in action.choices or ()) if takes_value else ()
            options.append(
                Option(
                    tuple(action.option_strings),
                    takes_value,
                    choices,
                    takes_value and not choices and _pathlike(action),
                    _one_line(action.help),
                )
            )
        else:
            files = files or _pathlike(action)
            words = words or tuple(str(c) for c in action.choices or ())
    return Command(name, _one_line(help_text), tuple(options), tuple(subcommands), files, words)


def _load(module: str, function: str) -> argparse.ArgumentParser:
    builder: Callable[[], argparse.ArgumentParser] = getattr(
        importlib.import_module(module), function
    )
    return builder()


def cli_command() -> Command:
    """`vllm-preflight`: its own dispatch (not argparse) and each subcommand's parser."""
    from preflight_operator.cli import SUBCOMMANDS  # noqa: PLC0415 - cli/__init__ imports us

    subs = [
        command_of(_load(*CLI_PARSERS[name]), name, text) for name, (_, text) in SUBCOMMANDS.items()
    ]
    subs.append(Command("completion", "print a shell completion script", words=SHELLS))
    return Command(
        "vllm-preflight",
        options=(
            Option(("-h", "--help"), False, help="show the help and exit"),
            Option(("-V", "--version"), False, help="print the version and exit"),
        ),
        subcommands=tuple(subs),
    )


def plugin_command() -> Command:
    """`kubectl vllm-preflight`: the plugin's parser, lint and audit with their own."""
    from preflight_operator.cli.kubectl_plugin import build_parser  # noqa: PLC0415

    replace = {name: _load(*where) for name, where in PLUGIN_DELEGATES.items()}
    return command_of(build_parser(), "kubectl-vllm_preflight", replace=replace)


# ---- kubectl's protocol: candidates for the words typed so far ---------------------------


def complete_words(root: Command, words: Sequence[str]) -> tuple[list[str], int]:
    """Candidates for the last of `words` (what is being typed; '' for a new word) after
    the others, and cobra's directive: no file completion unless a path is expected."""
    node, expect = root, None
    for word in words[:-1]:
        if expect is not None:
            expect = None
        elif word.startswith("-"):
            opt = node.option(word.split("=", 1)[0])
            if opt is not None and opt.takes_value and "=" not in word:
                expect = opt
        elif word in node.children:
            node = node.children[word]
    current = words[-1] if words else ""
    if expect is not None:
        matches = [c for c in expect.choices if c.startswith(current)]
        return matches, DIRECTIVE_DEFAULT if expect.files else DIRECTIVE_NO_FILE
    if current.startswith("-"):
        flags = [f for o in node.options for f in o.flags if f.startswith("--") or len(f) == 2]
        return [f for f in flags if f.startswith(current)], DIRECTIVE_NO_FILE
    names = [*node.children, *node.words]
    return [n for n in names if n.startswith(current)], (
        DIRECTIVE_DEFAULT if node.files else DIRECTIVE_NO_FILE
    )


def kubectl_complete_main(argv: Sequence[str] | None = None) -> int:
    """`kubectl_complete-vllm_preflight`: what kubectl runs on `kubectl vllm-preflight <TAB>`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        print(f"kubectl_complete-vllm_preflight {__version__}")
        return 0
    candidates, directive = complete_words(plugin_command(), args or [""])
    sys.stdout.write("".join(f"{c}\n" for c in candidates) + f":{directive}\n")
    return 0


# ---- the shells' scripts ----------------------------------------------------------------


def _ident(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _nodes(root: Command, path: str = "") -> list[tuple[str, Command]]:
    """Every command of the tree with its key in the bash script: `_` for the root, then
    the subcommand names joined by `__` (a shell word: `check_node` is `check-node`)."""
    here = [(path or "_", root)]
    for sub in root.subcommands:
        here += _nodes(sub, f"{path}__{_ident(sub.name)}" if path else _ident(sub.name))
    return here


def _quote_words(words: Sequence[str]) -> str:
    return " ".join(w for w in words if re.fullmatch(r"[A-Za-z0-9_.,:=+/@-]+", w))


def render_bash(root: Command, prog: str) -> str:
    """A bash completion function for `prog` (bash >= 4; `complete -F`)."""
    fn = f"_{_ident(prog)}_complete"
    walk, values, lists = [], [], []
    for key, node in _nodes(root):
        for sub in node.subcommands:
            child = f"{key}__{_ident(sub.name)}" if key != "_" else _ident(sub.name)
            walk.append(f'      "{key} {sub.name}") node={child} ;;')
        for opt in node.options:
            if not opt.takes_value:
                continue
            patterns = "|".join(f'"{key} {f}"' for f in opt.flags)
            walk.append(f"      {patterns}) skip=1 ;;")
            if opt.choices:
                action = f'COMPREPLY=($(compgen -W "{_quote_words(opt.choices)}" -- "$cur"))'
            elif opt.files:
                action = 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))'
            else:
                action = "COMPREPLY=()"
            values.append(f"      {patterns}) {action}; return 0 ;;")
        all_flags = [f for o in node.options for f in o.flags]
        names = [s.name for s in node.subcommands] + list(node.words)
        lists.append(
            f'      {key}) opts="{_quote_words(all_flags)}" names="{_quote_words(names)}"'
            f" files={int(node.files)} ;;"
        )
    nl = "\n"
    return f"""# bash completion for {prog} {__version__}, generated from its argparse parsers
# (`{prog} completion bash`; docs/INSTALL.md, "Shell completion").
{fn}() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local node=_ skip= i w opts names files
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${{COMP_WORDS[i]}}
    if [[ -n $skip ]]; then skip=; continue; fi
    case "$node $w" in
{nl.join(walk)}
    esac
  done
  if [[ -n $skip ]]; then
    case "$node $prev" in
{nl.join(values)}
    esac
    return 0
  fi
  case $node in
{nl.join(lists)}
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$names" -- "$cur"))
    if [[ $files == 1 ]]; then
      compopt -o filenames 2>/dev/null
      COMPREPLY+=($(compgen -f -- "$cur"))
    fi
  fi
  return 0
}}
complete -F {fn} {prog}
"""


def render_zsh(root: Command, prog: str) -> str:
    """zsh: the bash function through zsh's own bashcompinit (a standard zsh module)."""
    return (
        f"#compdef {prog}\n"
        f"# zsh completion for {prog} {__version__}: the bash completion below, run by\n"
        "# zsh's bashcompinit (autoloaded from zsh's own functions).\n"
        "autoload -U +X bashcompinit && bashcompinit\n"
        "autoload -U +X compinit && compinit -u\n" + render_bash(root, prog)
    )


def _fish_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def render_fish(root: Command, prog: str) -> str:
    """fish: one `complete -c` line per subcommand, flag and value list."""
    lines = [
        f"# fish completion for {prog} {__version__}, generated from its argparse parsers",
        f"complete -c {prog} -f",
    ]
    for sub in root.subcommands:
        lines.append(
            f"complete -c {prog} -n __fish_use_subcommand -a {sub.name}"
            f" -d '{_fish_escape(sub.help)}'"
        )
    for opt in root.options:
        lines.append(_fish_option(prog, "__fish_use_subcommand", opt))
    for sub in root.subcommands:
        cond = f"'__fish_seen_subcommand_from {sub.name}'"
        for inner in sub.subcommands:
            lines.append(
                f"complete -c {prog} -n {cond} -a {inner.name} -d '{_fish_escape(inner.help)}'"
            )
        for word in sub.words:
            lines.append(f"complete -c {prog} -n {cond} -a {word}")
        if sub.files:
            lines.append(f"complete -c {prog} -n {cond} -F")
        for opt in sub.options:
            lines.append(_fish_option(prog, cond, opt))
        for inner in sub.subcommands:
            inner_cond = f"'__fish_seen_subcommand_from {inner.name}'"
            lines += [_fish_option(prog, inner_cond, opt) for opt in inner.options]
    return "\n".join(lines) + "\n"


def _fish_option(prog: str, cond: str, opt: Option) -> str:
    parts = [f"complete -c {prog} -n {cond}"]
    for flag in opt.flags:
        parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    if opt.takes_value:
        parts.append("-r")
        if opt.choices:
            parts.append(f"-a '{_quote_words(opt.choices)}'")
        elif opt.files:
            parts.append("-F")
    if opt.help:
        parts.append(f"-d '{_fish_escape(opt.help)}'")
    return " ".join(parts)


RENDERERS: dict[str, Callable[[Command, str], str]] = {
    "bash": render_bash,
    "zsh": render_zsh,
    "fish": render_fish,
}


def script(shell: str, which: str = "cli") -> str:
    """The completion script of `vllm-preflight` (which='cli') or of the plugin executable
    `kubectl-vllm_preflight` (which='plugin', for running it without kubectl)."""
    if which == "plugin":
        return RENDERERS[shell](plugin_command(), "kubectl-vllm_preflight")
    return RENDERERS[shell](cli_command(), "vllm-preflight")


def main(argv: Sequence[str]) -> int:
    """`vllm-preflight completion {bash,zsh,fish} [--plugin]`."""
    args = list(argv)
    plugin = "--plugin" in args
    args = [a for a in args if a != "--plugin"]
    if len(args) != 1 or args[0] not in SHELLS:
        print(
            "usage: vllm-preflight completion {bash,zsh,fish} [--plugin]\n"
            "  prints the completion script of vllm-preflight (--plugin: of the executable "
            "kubectl-vllm_preflight; `kubectl vllm-preflight` completes through "
            "kubectl_complete-vllm_preflight)",
            file=sys.stderr if args[:1] not in (["-h"], ["--help"]) else sys.stdout,
        )
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    sys.stdout.write(script(args[0], "plugin" if plugin else "cli"))
    return 0
