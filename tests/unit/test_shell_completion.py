"""Shell completion (issue 40, item 6) and `--version` on every entry point.

The oracles are the shells and kubectl themselves: the generated bash script is sourced by a
real bash, registered (`complete -p`) and asked for candidates the way bash's programmable
completion asks (COMP_WORDS/COMP_CWORD, then COMPREPLY), its file candidates compared with
bash's own `compgen -f`; the plugin's `kubectl_complete-vllm_preflight` is run by the real
kubectl (`kubectl __complete vllm-preflight ...`, the entry cobra's shell scripts call),
when the control plane's kubectl is built; zsh and fish load their scripts when installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from preflight_operator import __version__
from preflight_operator.cli import completion

REPO = Path(__file__).resolve().parents[2]
PYPATH = os.pathsep.join(str(REPO / p) for p in ("operator", "initcontainer"))


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "PYTHONPATH": PYPATH, "HOME": "/nonexistent", **extra}


def _bash_complete(script: str, fn: str, words: list[str], cwd: Path) -> list[str]:
    """Candidates bash's programmable completion gets from `script` for `words` (the last
    one being typed)."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = (
        f"{script}\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; COMPREPLY=()\n"
        f"{fn}\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True, text=True, cwd=cwd, timeout=60, check=True,
    )  # fmt: skip
    return sorted(line for line in result.stdout.splitlines() if line)


@pytest.fixture(scope="module")
def cli_bash() -> str:
    return completion.script("bash")


def test_bash_registers_the_function(cli_bash: str) -> None:
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", f"{cli_bash}\ncomplete -p vllm-preflight"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert result.stdout.strip() == "complete -F _vllm_preflight_complete vllm-preflight"


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["vllm-preflight", ""], ["check", "completion", "lint", "operator"]),
        (["vllm-preflight", "li"], ["lint"]),
        (["vllm-preflight", "--v"], ["--version"]),
        (["vllm-preflight", "lint", "--fo"], ["--format"]),
        (["vllm-preflight", "lint", "--format", ""], ["json", "junit", "sarif", "text"]),
        (["vllm-preflight", "lint", "--format", "s"], ["sarif"]),
        (["vllm-preflight", "lint", "--fail-on", ""], ["deny", "fail", "unjudged", "warn"]),
        (["vllm-preflight", "check", "--tier", ""], ["deep", "fast"]),
        (["vllm-preflight", "check", "--tp", ""], []),  # a number: nothing to offer
        (["vllm-preflight", "check", "--tp", "2", "--tie"], ["--tier"]),
        (["vllm-preflight", "operator", "--webhook-p"], ["--webhook-port"]),
        (["vllm-preflight", "completion", ""], ["bash", "fish", "zsh"]),
    ],
)
def test_bash_completes_subcommands_flags_and_choices(
    cli_bash: str, words: list[str], expected: list[str], tmp_path: Path
) -> None:
    assert _bash_complete(cli_bash, "_vllm_preflight_complete", words, tmp_path) == expected


def test_bash_completes_paths_where_a_path_is_read(cli_bash: str, tmp_path: Path) -> None:
    for name in ("deploy.yaml", "deploy-gpu.yaml", "other.json"):
        (tmp_path / name).write_text("{}")
    bash_own = subprocess.run(
        ["bash", "-c", 'compgen -f -- "dep"'],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=True,
    ).stdout.split()  # fmt: skip
    assert sorted(bash_own) == ["deploy-gpu.yaml", "deploy.yaml"]
    fn = "_vllm_preflight_complete"
    assert _bash_complete(cli_bash, fn, ["vllm-preflight", "lint", "dep"], tmp_path) == sorted(
        bash_own
    )
    assert _bash_complete(
        cli_bash, fn, ["vllm-preflight", "lint", "--policy", "oth"], tmp_path
    ) == ["other.json"]
    # ... and nowhere else: a subcommand name is not a file.
    assert _bash_complete(cli_bash, fn, ["vllm-preflight", "dep"], tmp_path) == []


def test_plugin_bash_script_has_the_plugin_commands(tmp_path: Path) -> None:
    script = completion.script("bash", "plugin")
    fn = "_kubectl_vllm_preflight_complete"
    words = ["kubectl-vllm_preflight", ""]
    assert _bash_complete(script, fn, words, tmp_path) == [
        "audit", "check-node", "explain", "lint", "status",
    ]  # fmt: skip
    # audit and lint complete with the parsers that really read their flags
    assert _bash_complete(script, fn, ["kubectl-vllm_preflight", "audit", "-o", ""], tmp_path) == [
        "json",
        "table",
    ]
    assert "--format" in _bash_complete(
        script, fn, ["kubectl-vllm_preflight", "lint", "--"], tmp_path
    )
    assert _bash_complete(
        script, fn, ["kubectl-vllm_preflight", "check-node", "n1", "--tier", ""], tmp_path
    ) == ["deep", "fast"]


def test_a_new_flag_completes_without_touching_the_generator() -> None:
    """The tree is read from the parsers: a flag added to one is offered."""
    import argparse

    parser = argparse.ArgumentParser(prog="x")
    parser.add_argument("--brand-new", choices=("a", "b"))
    tree = completion.command_of(parser, "x")
    assert completion.complete_words(tree, ["--brand-new", ""]) == (["a", "b"], 4)
    assert completion.complete_words(tree, ["--br"]) == (["--brand-new"], 4)


# ---- kubectl's plugin completion, through the real kubectl --------------------------------


def _kubectl() -> Path | None:
    env = os.environ.get("VLLM_PREFLIGHT_K8S_BIN", "").strip()
    if env and (Path(env) / "kubectl").is_file():
        return Path(env) / "kubectl"
    result = subprocess.run(
        [str(REPO / "hack/k8s/build.sh"), "controlplane", "--cached"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        return None
    return Path(result.stdout.strip().splitlines()[-1]) / "kubectl"


def _shim(path: Path, code: str) -> None:
    path.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{code}" "$@"\n')
    path.chmod(0o755)


def test_kubectl_runs_the_completion_executable(tmp_path: Path) -> None:
    kubectl = _kubectl()
    if kubectl is None:
        pytest.skip("the control plane's kubectl is not built (hack/k8s/build.sh controlplane)")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # What pip installs: the plugin and its completion executable, as console scripts.
    _shim(
        bindir / "kubectl-vllm_preflight",
        "import sys; from preflight_operator.cli.kubectl_plugin import main; sys.exit(main())",
    )
    _shim(
        bindir / "kubectl_complete-vllm_preflight",
        "import sys; from preflight_operator.cli.completion import kubectl_complete_main as m;"
        " sys.exit(m())",
    )
    env = _env(PATH=f"{bindir}:/usr/bin:/bin", KUBECONFIG=str(tmp_path / "none"))

    def kubectl_complete(*words: str) -> list[str]:
        result = subprocess.run(
            [str(kubectl), "__complete", *words],
            capture_output=True, text=True, env=env, timeout=60, check=True,
        )  # fmt: skip
        return [line.split("\t")[0] for line in result.stdout.splitlines()]  # no descriptions

    # kubectl itself offers the plugin's name ...
    assert "vllm-preflight" in kubectl_complete("vllm-p")
    # ... and for its arguments runs kubectl_complete-vllm_preflight, keeping its directive
    assert kubectl_complete("vllm-preflight", "st") == ["status", ":4"]
    assert kubectl_complete("vllm-preflight", "status", "--color", "") == [
        "auto", "always", "never", ":4",
    ]  # fmt: skip
    assert kubectl_complete("vllm-preflight", "check-node", "n1", "--tier", "d") == [
        "deep",
        ":4",
    ]
    # lint reads files: directive 0, the shell's own file completion
    assert kubectl_complete("vllm-preflight", "lint", "x")[-1] == ":0"


# ---- zsh and fish: they load the scripts and answer -----------------------------------


def test_fish_completes_from_its_script(tmp_path: Path) -> None:
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed (hack/prepare_tests.sh installs it as root)")
    script = tmp_path / "vllm-preflight.fish"
    script.write_text(completion.script("fish"))
    result = subprocess.run(
        [fish, "--no-config", "-c",
         f"source {script}; complete -C 'vllm-preflight li'; "
         f"complete -C 'vllm-preflight lint --format '"],
        capture_output=True, text=True, timeout=60, check=True,
        env={**_env(), "HOME": str(tmp_path)},
    )  # fmt: skip
    words = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert "lint" in words
    assert {"json", "junit", "sarif", "text"} <= set(words)


def test_zsh_loads_its_script(tmp_path: Path) -> None:
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed (hack/prepare_tests.sh installs it as root)")
    script = tmp_path / "_vllm-preflight"
    script.write_text(completion.script("zsh"))
    # zsh's bashcompinit defines `complete`; the script registers the function with it.
    result = subprocess.run(
        [zsh, "-f", "-c",
         f"source {script}; print -r -- $_comps[vllm-preflight]; "
         "setopt ksharrays; COMP_WORDS=(vllm-preflight lint --format ''); COMP_CWORD=3; "
         '_vllm_preflight_complete; print -r -- "${COMPREPLY[@]}"'],
        capture_output=True, text=True, timeout=60, check=False,
        env={**_env(), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].strip(), "vllm-preflight has no completion function in zsh"
    # zsh's compgen leaves the prefix match to compadd (zsh filters what it is given)
    assert sorted(lines[-1].split()) == ["json", "junit", "sarif", "text"]


# ---- --version on every entry point ----------------------------------------------------


COMPLETE_MAIN = (
    "import sys; from preflight_operator.cli.completion import kubectl_complete_main as m;"
    " sys.exit(m())"
)
V = __version__
PLUGIN = "preflight_operator.cli.kubectl_plugin"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-m", "preflight_operator.cli", "--version"], f"vllm-preflight {V}"),
        (["-m", "preflight_operator.cli", "check", "--version"], f"vllm-preflight check {V}"),
        (["-m", "preflight_operator.cli", "operator", "--version"], f"vllm-preflight operator {V}"),
        (["-m", PLUGIN, "--version"], f"kubectl vllm-preflight {V}"),
        (["-m", "preflight_operator.cli.install", "--version"], f"vllm-preflight-install {V}"),
        (["-m", "preflight_check", "--version"], f"vllm-preflight check {V}"),
        (["-c", COMPLETE_MAIN, "--version"], f"kubectl_complete-vllm_preflight {V}"),
    ],
)  # fmt: skip
def test_every_entry_point_prints_its_version(argv: list[str], expected: str) -> None:
    result = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=_env(), timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_every_console_script_is_covered() -> None:
    """A console script added to pyproject.toml without a --version test fails here."""
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == {
        "vllm-preflight",
        "vllm-preflight-install",
        "kubectl-vllm_preflight",
        "kubectl_complete-vllm_preflight",
    }
