"""The one redaction layer (preflight_contract/redact.py, issue 36 item 2): what each rule
hides and what it leaves alone, the env the checker reads its secrets from, the injector's
PREFLIGHT_SECRET_ENV, and credentials that never follow a redirect to another host (a real
pair of HTTP servers on 127.0.0.1, each recording the headers it received)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from preflight_contract import envnames, modelsource, redact
from preflight_contract.modelsource import find as modelsource_find
from preflight_contract.redact import MARK, Redactor
from preflight_contract.report import CheckResult, Report
from preflight_operator.core.injection import plan_injection
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.static import Plan

HIDDEN = [
    # (text, the secret in it, what must remain)
    ("HF_ENDPOINT=http://user:hunter22@mirror.example:8080 is down", "hunter22", "mirror.example"),
    ("https://user@host.example/x", "user@", "https://***@host.example/x"),
    ("s3 https://b.s3.amazonaws.com/k?X-Amz-Signature=abcdef0123&x=1", "abcdef0123", "x=1"),
    ("https://b/k?X-Amz-Credential=AKIAEXAMPLE%2F2024&a=b", "AKIAEXAMPLE", "a=b"),
    ("https://b/k?X-Amz-Security-Token=FQoGZXIvYXdzEB", "FQoGZXIv", "X-Amz-Security-Token="),
    ("https://acct.blob.core.windows.net/c?sv=2022&sig=AzureSig0123", "AzureSig0123", "sv=2022"),
    ("https://x/y?token=tok12345&access_token=acc12345", "12345", "token=***"),
    ("Authorization: Bearer hf_abcdefgh1234", "hf_abcdefgh1234", "Authorization: Bearer ***"),
    ("{'authorization': 'Basic dXNlcjpwYXNz'}", "dXNlcjpwYXNz", "authorization"),
    ("curl -H 'X-Api-Key: k_0123456789' url", "k_0123456789", "X-Api-Key: ***"),
    ("sent bearer hf_zyxwvuts9", "hf_zyxwvuts9", "bearer ***"),
    ("env HF_TOKEN=hf_qwertyuiop1", "hf_qwertyuiop1", "HF_TOKEN=***"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY=***"),
    ('{"api_key": "sk-abcdef12345"}', "sk-abcdef12345", "api_key"),
    ("vllm serve m --api-key sk-0987654321 -tp 2", "sk-0987654321", "--api-key *** -tp 2"),
    ("vllm serve m --hf-token=hf_poiuytrewq", "hf_poiuytrewq", "--hf-token=***"),
]

KEPT = [
    "vLLM needs 3 devices in this pod (TP=3 x PP=1) but spec.containers[0] gives it 2",
    "see https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json",
    "http://[::1]:8080/x and https://10.0.0.1:443/api/models/a/b?blobs=true",
    "--kv-cache-dtype fp8 --max-model-len 4096 --ssl-keyfile /etc/tls/key.pem",
    "mail admin@example.com",
    "CUDA_VISIBLE_DEVICES=0,1 NCCL_IB_HCA=mlx5 TP=2",
    "the model key: its weights",
    "--max-num-batched-tokens 8192 --max-num-seqs=256 max_tokens=4096 --tokenizer=org/tok",
    "--ssl-keyfile=/etc/tls/key.pem tokenizer_mode=auto signal=SIGTERM author=me",
    "env: [{name: HF_TOKEN, valueFrom: {secretKeyRef: {name: hf, key: token}}}]",
    "envFrom: [{secretRef: {name: hf}}], volumes: [{secret: {secretName: hf-token}}]",
    "imageID docker-pullable://vllm@sha256:0123abcd and vllm/vllm-openai@sha256:0123abcd",
    "a bearer token, the basic policy; flags: --api-key --ignore-patterns",
    "PREFLIGHT_SECRET_ENV: the names; PREFLIGHT_SECRET_ENV=MODEL,AWS_*",
]


@pytest.mark.parametrize(("text", "secret", "kept"), HIDDEN)
def test_each_pattern_hides_the_secret_and_shows_the_mark(
    text: str, secret: str, kept: str
) -> None:
    out = redact.text(text)
    assert secret not in out
    assert MARK in out
    assert kept in out
    assert redact.text(out) == out  # idempotent: a redacted status re-written is the same


@pytest.mark.parametrize("text", KEPT)
def test_text_without_secrets_is_left_alone(text: str) -> None:
    assert redact.text(text) == text


def test_known_values_are_hidden_wherever_they_stand_in_every_form() -> None:
    hide = Redactor(["s3cr3t/value!", "abc"])  # "abc": shorter than MIN_VALUE_LENGTH
    out = hide.text("a s3cr3t/value! b s3cr3t%2Fvalue%21 c s3cr3t%2Fvalue%21 d abc")
    assert "s3cr3t" not in out
    assert out.count(MARK) == 3
    assert out.endswith("abc")


def test_the_checker_reads_its_secrets_from_its_env() -> None:
    environ = {
        "HF_TOKEN": "hf_named_secret",  # named like a secret
        "MY_PW": "from-a-secret",  # a Secret's, by PREFLIGHT_SECRET_ENV
        "S_ONE": "prefixed-secret",  # an envFrom Secret with prefix S_
        "S_SHORT": "no",  # too short to search for
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",  # a switch, whatever its name says
        "VLLM_MAX_TOKENS": "40960",  # a number, and tokens are no token
        "TOKEN_COUNT": "123456",  # a number
        "HF_ENDPOINT": "http://u:url-password@mirror",  # a URL's password is one too
        "PATH": "/usr/bin:/bin",
        "HOSTNAME": "vllm-0",
        envnames.SECRET_ENV: "MY_PW,S_*",
    }
    hide = redact.for_process(environ, environ[envnames.SECRET_ENV])
    text = " ".join(environ.values())
    out = hide.text(text)
    for secret in ("hf_named_secret", "from-a-secret", "prefixed-secret", "url-password"):
        assert secret not in out
    for kept in ("/usr/bin:/bin", "vllm-0", " no ", " 1 ", "40960", "123456"):
        assert kept in out


def test_an_env_from_secret_without_prefix_leaves_the_images_own_names() -> None:
    environ = {
        "DB_URL": "postgres-host-value",
        "PATH": "/usr/local/bin",
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "VLLM_SERVICE_PORT": "8000",
        "ENABLED": "true",
    }
    hide = redact.for_process(environ, "*")
    assert hide.text(" ".join(environ.values())) == "*** /usr/local/bin 10.96.0.1 8000 true"


def test_a_malformed_secret_env_value_only_ever_hides_more() -> None:
    assert redact.parse_secret_env("A,,b c,$(X),OK_1,P_*") == ["A", "OK_1", "P_*"]
    assert redact.parse_secret_env("A," * 10_000) == []  # over the bound: ignored


def test_the_report_is_redacted_in_every_text() -> None:
    report = Report(
        checks=[
            CheckResult(
                "model-source",
                "warn",
                "the Hub at http://u:pw12345@m did not answer",
                "check HF_TOKEN=hf_in_fix",
                {"endpoint": "http://u:pw12345@m", "nested": [{"v": "tok_in_evidence"}]},
            )
        ],
        plan={"args": "--api-key tok_in_plan"},
        error="crash with tok_in_evidence",
    )
    Redactor(["tok_in_evidence"]).report(report)
    text = report.to_json() + report.to_termination_message()
    for secret in ("pw12345", "hf_in_fix", "tok_in_evidence", "tok_in_plan"):
        assert secret not in text
    assert MARK in text


# -- the injector names the Secret-derived env ------------------------------------------


def _pod(env: list[dict[str, Any]], env_from: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "command": ["vllm", "serve", "m", "-tp", "2"],
                    "env": env,
                    "envFrom": env_from,
                    "resources": {"limits": {"nvidia.com/gpu": 2}},
                }
            ]
        },
    }


def _check_env(pod: dict[str, Any]) -> dict[str, Any]:
    injection = plan_injection(
        pod,
        container="vllm",
        plan=Plan(tp=2, pp=1, dp=1, dp_local=1, gpus_needed=2, container="vllm"),
        policy=PolicySpec(),
        config=InjectionConfig(),
        workload_label=None,
    )
    check = injection.init_containers[1]  # type: ignore[union-attr]
    return {e["name"]: e.get("value") for e in check["env"]}


def test_the_injector_names_the_vllm_containers_secret_env() -> None:
    pod = _pod(
        [
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}},
            {"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "m"}}},
            {"name": "PLAIN", "value": "x"},
            {"name": "bad name$(X)", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        ],
        [{"secretRef": {"name": "aws"}, "prefix": "AWS_"}, {"configMapRef": {"name": "c"}}],
    )
    assert _check_env(pod)[envnames.SECRET_ENV] == "AWS_*,HF_TOKEN"
    assert envnames.SECRET_ENV not in _check_env(_pod([{"name": "A", "value": "b"}], []))


# -- credentials never follow a redirect to another origin ------------------------------


class _Recorder:
    """A local HTTP server that records every request's headers; ``redirect`` sends each
    GET on to that URL (302), else it answers {} as JSON."""

    def __init__(self, redirect: str | None = None) -> None:
        self.seen: list[dict[str, str]] = []
        self.redirect = redirect
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                recorder.seen.append({k.lower(): v for k, v in self.headers.items()})
                target = recorder.redirect
                if target is not None:
                    self.send_response(302)
                    self.send_header("Location", target + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> _Recorder:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def other_origin() -> Iterator[_Recorder]:
    with _Recorder() as target:
        yield target


def test_the_token_does_not_follow_a_redirect_to_another_port(other_origin: _Recorder) -> None:
    with _Recorder(redirect=other_origin.url) as hub:
        environ = {"HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_must_not_travel", "HOME": "/nonexistent"}
        files, where = modelsource.fetch_hub("org/model", environ, timeout_s=5.0)
    assert files is not None, where  # the redirect was followed: the target answered
    assert hub.seen
    assert hub.seen[0]["authorization"] == "Bearer hf_must_not_travel"
    assert other_origin.seen
    assert all("authorization" not in headers for headers in other_origin.seen)


def test_the_token_follows_a_redirect_on_the_same_origin() -> None:
    with _Recorder() as hub:
        hub.redirect = None
        # a redirect from the same server to itself: first request redirected, then served
        first = {"n": 0}
        handler = hub.server.RequestHandlerClass
        original = handler.do_GET  # type: ignore[attr-defined]

        def once(self: Any) -> None:
            first["n"] += 1
            if first["n"] == 1:
                hub.seen.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(307)
                self.send_header("Location", "/moved" + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            original(self)

        handler.do_GET = once  # type: ignore[attr-defined]
        data, why = modelsource_find._get_json(hub.url + "/a/config.json", "hf_same_origin", 5.0)
    assert data == {}, why
    assert len(hub.seen) == 2
    assert all(h.get("authorization") == "Bearer hf_same_origin" for h in hub.seen)


@pytest.mark.parametrize(
    ("old", "new", "keeps"),
    [
        ("https://huggingface.co/a", "https://huggingface.co/b", True),
        ("https://huggingface.co/a", "https://cdn-lfs.huggingface.co/b", False),
        ("http://hub.local/a", "https://hub.local/b", True),  # requests: http -> https, same host
        ("https://hub.local/a", "http://hub.local/b", False),
        ("http://hub.local:8080/a", "http://hub.local:8081/a", False),
        ("https://hub.local/a", "https://hub.local:443/a", True),
        ("http://hub.local:8080/a", "https://hub.local/a", False),
    ],
)
def test_keeps_credentials_is_requests_should_strip_auth(old: str, new: str, keeps: bool) -> None:
    assert modelsource.keeps_credentials(old, new) is keeps


def test_a_huge_text_is_cut_before_the_patterns_run() -> None:
    huge = "a" * 1_000_000 + "=HF_TOKEN=hf_at_the_end"
    out = redact.text(huge)
    assert len(out) == redact.MAX_TEXT
    assert "hf_at_the_end" not in out
