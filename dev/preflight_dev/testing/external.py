"""ExternalCluster: the same test API against a cluster somebody else runs."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from pathlib import Path

from preflight_dev.testing.base import Cluster, KubectlError
from preflight_dev.testing.binaries import find_bin_dir


class ExternalCluster(Cluster):
    """Uses `kubeconfig` (its current context) as is. start() checks that the cluster
    answers; stop() deletes the namespaces this object created and its scratch files.
    Nothing here can reach a webhook on this machine's 127.0.0.1, hence is_local=False."""

    is_local = False

    def __init__(self, kubeconfig: Path, bin_dir: Path | None = None) -> None:
        super().__init__(bin_dir)
        self._given = kubeconfig

    def start(self) -> ExternalCluster:
        if self._kubeconfig is not None:
            return self
        if not self._given.is_file():
            raise FileNotFoundError(f"kubeconfig {self._given} does not exist")
        if self._bin_dir is None:
            self._bin_dir = find_bin_dir()
        self._kubeconfig = self._given.resolve()
        self._scratch = Path(tempfile.mkdtemp(prefix="vllm-preflight-external-"))
        try:
            out = self.kubectl("version", "-o", "json", timeout=30).stdout
        except KubectlError as err:
            self.stop()
            raise ConnectionError(f"cluster of {self._given} does not answer: {err}") from err
        self.version = json.loads(out).get("serverVersion", {}).get("gitVersion", "")
        return self

    def stop(self) -> None:
        if self._kubeconfig is not None:
            for namespace in self._namespaces:
                with contextlib.suppress(KubectlError):
                    self.delete_namespace(namespace)
        self._namespaces = []
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
        self._scratch = None
        self._kubeconfig = None
