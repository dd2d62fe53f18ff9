"""The floor of the webhook benchmark: a TLS server that answers every AdmissionReview
"allowed" and does nothing else — same aiohttp, same TLS certificate, same JSON in and out
as the operator's webhook server, none of the work.

    python hack/bench/floor_webhook.py --port PORT --cert tls.crt --key tls.key
"""

from __future__ import annotations

import argparse
import json
import logging
import ssl

from aiohttp import web


async def review(request: web.Request) -> web.Response:
    data = json.loads(await request.text())
    uid = (data.get("request") or {}).get("uid", "")
    return web.json_response(
        {
            "apiVersion": data.get("apiVersion", "admission.k8s.io/v1"),
            "kind": "AdmissionReview",
            "response": {"uid": uid, "allowed": True},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    context = ssl.create_default_context(purpose=ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    app = web.Application()
    app.add_routes([web.post("/{id:.*}", review)])
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    web.run_app(
        app, host="127.0.0.1", port=args.port, ssl_context=context, print=None, access_log=None
    )


if __name__ == "__main__":
    main()
