"""The parser's first step: what vLLM does to argv before argparse sees it. ``vllm serve``
moves ``--model`` to the positional slot and checks ``--served-model-name``; ``--config
FILE`` is read and its options inserted; FlexibleArgumentParser turns underscores into
dashes, expands ``-O3`` and folds dotted dict arguments.

Separate from argparse's reading (``argparse_walk``): these are vLLM's own rewrites,
which change with vLLM, not with argparse.
"""

from __future__ import annotations

import json
import re
from typing import List, Mapping, Optional

from preflight_contract.vllm_args.options import _BOOL, _BY_NAME
from preflight_contract.vllm_args.parser_state import _ParserBase, _Tok
from preflight_contract.vllm_args.results import SERVE, Origin


class _RewriteSteps(_ParserBase):
    """vLLM's rewriting of argv before argparse: --model, --config, FlexibleArgumentParser."""

    def move_model_flag(self, toks: List[_Tok]) -> List[_Tok]:
        """`vllm serve -tp 2 --model M` -> `vllm serve M -tp 2` (vLLM does this first)."""
        for i, tok in enumerate(toks):
            if tok.text == "--model" or (tok.text.startswith("--model=") and len(tok.text) > 8):
                if tok.text == "--model":
                    if i + 1 >= len(toks) or toks[i + 1].text.startswith("-"):
                        self.problem("--model", "", "expects a model name", "model")
                        return toks
                    model, rest = toks[i + 1], toks[i + 2 :]
                else:
                    model = _Tok(tok.text[8:], tok.index, tok.spelling)
                    rest = toks[i + 1 :]
                return [toks[0], model, *toks[1:i], *rest]
        return toks

    def check_served_model_name(self, toks: List[_Tok]) -> None:
        texts = [t.text for t in toks]
        if (
            len(texts) > 1
            and texts[1].startswith("-")
            and not any(re.match(r"^--config(=.+|$)", t) for t in texts)
            and any(re.match(r"^--served[-_]model[-_]name(=.+|$)", t) for t in texts)
        ):
            self.problem(
                "model",
                texts[1],
                "with --served-model-name, vLLM requires the model as the first "
                "positional argument (`vllm serve MODEL --served-model-name ...`)",
                "model",
            )

    # -- --config -----------------------------------------------------------------------
    def pull_config(self, toks: List[_Tok], entry: str) -> List[_Tok]:
        for tok in toks:
            if tok.text.startswith("--config="):
                self.warning(
                    "--config=",
                    tok.text[len("--config=") :],
                    "vLLM reads a config file only from the two-token form `--config FILE`; "
                    "this spelling is accepted and then ignored",
                    "config",
                )
        where = [i for i, t in enumerate(toks) if t.text == "--config"]
        if not where:
            return toks
        if len(where) > 1:
            self.problem("--config", "", "more than one config file specified", "config")
            return toks
        index = where[0]
        if index == len(toks) - 1:
            self.problem("--config", "", "no config file specified", "config")
            return toks
        path = toks[index + 1].text
        self.result.config_path = path
        self.result.origins["config"] = Origin("--config", toks[index + 1].index)
        before, after = toks[:index], toks[index + 2 :]
        extension = path.split(".")[-1]
        if extension not in ("yaml", "yml"):
            self.problem(
                "--config",
                path,
                f"config file must be of a yaml/yml type, {extension} supplied",
                "config",
            )
            return before + after
        config_toks = self.config_tokens(path)
        if config_toks is None:
            return before + after
        if entry != SERVE:
            return config_toks + before + after
        # Judged on the command line as written, --config included: `vllm serve --config
        # c.yaml MODEL` does not count as "model on the command line" for vLLM either.
        model_in_cli = len(toks) > 1 and not toks[1].text.startswith("-")
        model_in_config = any(t.text == "--model" for t in config_toks)
        if not model_in_cli and not model_in_config:
            self.problem(
                "model",
                "",
                "no model specified: give it as the positional argument or in the config file",
                "model",
            )
        cut = 2 if model_in_cli else 1
        return before[:cut] + config_toks + before[cut:] + after

    def config_tokens(self, path: str) -> Optional[List[_Tok]]:
        if self.load_config is None:
            self.warning("--config", path, "config file not available; its options are not known")
            return None
        try:
            content = self.load_config(path)
        except LookupError as exc:
            detail = f": {exc.args[0]}" if exc.args else ""
            self.warning(
                "--config", path, f"config file not available{detail}; its options are not known"
            )
            return None
        except Exception as exc:
            self.problem("--config", path, f"config file cannot be read: {exc}", "config")
            return None
        if not isinstance(content, Mapping):
            self.problem(
                "--config",
                path,
                f"config file must be a YAML mapping of option: value, "
                f"not {type(content).__name__}",
                "config",
            )
            return None
        self.result.config_loaded = True
        out: List[_Tok] = []

        def add(text: str, key: str) -> None:
            out.append(_Tok(text, None, f"{key} (in --config {path})", True))

        for key, value in content.items():
            if not isinstance(key, str):
                self.problem("--config", path, f"config key {key!r} is not a string", "config")
                continue
            for text in _config_entry_texts(key, value):
                add(text, key)
        return out

    # -- FlexibleArgumentParser's rewriting ---------------------------------------------
    def preprocess(self, toks: List[_Tok]) -> List[_Tok]:
        out: List[_Tok] = []
        for i, tok in enumerate(toks):
            text = tok.text
            if text.startswith("--"):
                # underscores -> dashes in the name, up to the first '.' (dict keys stay)
                key, eq, value = text.partition("=")
                head, dot, tail = key[2:].partition(".")
                key = "--" + head.replace("_", "-") + dot + tail
                if head.replace("_", "-") == "hf-overrides":
                    # may rewrite the model's config (length, RoPE): the model rules
                    # then do not judge what it can change
                    self.result.hf_overrides = True
                out.append(_Tok(key + eq + value, tok.index, tok.spelling, tok.from_config))
            elif text.startswith("-O") and text != "-O":
                level = text[3:] if text[2:3] == "=" else text[2:]
                out.append(_Tok("--optimization-level", tok.index, tok.spelling, tok.from_config))
                out.append(_Tok(level, tok.index, tok.spelling, tok.from_config))
            elif text == "-O" and i + 1 < len(toks) and toks[i + 1].text in ("0", "1", "2", "3"):
                out.append(_Tok("--optimization-level", tok.index, tok.spelling, tok.from_config))
            else:
                out.append(tok)
        # `--compilation-config.level 3` style dict arguments are folded into JSON and
        # appended; they never carry the options we track, so drop them here.
        kept: List[_Tok] = []
        skip = False
        for i, tok in enumerate(out):
            if skip:
                skip = False
                continue
            text = tok.text
            if text.startswith("-") and "." in text.split("=", 1)[0]:
                if "=" not in text:
                    if i + 1 >= len(out):
                        self.problem(tok.spelling, "", "expects a value")
                    skip = True
                continue
            kept.append(tok)
        return kept


def _config_entry_texts(key: str, value: object) -> List[str]:
    """The command-line tokens vLLM makes of one `key: value` of a --config file."""
    flag = "--" + key
    if isinstance(value, bool):
        if value:
            return [flag]
        return ["--no-" + key] if _no_form_exists(flag) else []
    if isinstance(value, list):
        return [flag, *(_safe_str(item) for item in value)] if value else []
    if isinstance(value, dict):
        return [flag, json.dumps(value, default=str)]
    return [flag, _safe_str(value)]


def _no_form_exists(flag: str) -> bool:
    """vLLM maps `key: false` in --config to --no-key only where that option exists."""
    found = _BY_NAME.get(flag.replace("_", "-"))
    return found is not None and found[0].kind == _BOOL


def _safe_str(value: object) -> str:
    try:
        return str(value)
    except Exception:
        return repr(type(value))
