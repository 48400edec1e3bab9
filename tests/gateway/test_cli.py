"""`workbench serve-gateway MODEL`: a harness in another process opens a rollout with the admin key
the command prints, calls the model through it, and the call lands in the run directory's store."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

import httpx
import openai

from workbench.cli.gateway import policy_spec
from workbench.gateway.calllog import CALL_LOG_NAME, CallLog


def test_model_names_become_policy_specs():
    assert policy_spec("scripted") == "scripted"
    assert policy_spec("openai:http://x") == "openai:http://x"
    assert policy_spec("HuggingFaceTB/SmolLM2-135M-Instruct") == "transformers:HuggingFaceTB/SmolLM2-135M-Instruct"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_gateway_records_a_subprocess_harness(tmp_path):
    from workbench.store import Store

    port = _free_port()
    argv = [sys.executable, "-m", "workbench", "serve-gateway", "scripted", "--store", str(tmp_path / "run")]
    proc = subprocess.Popen(
        [*argv, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ
    )
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
        key = re.search(r"admin key: (\S+)", lines[1]).group(1)
        url = f"http://127.0.0.1:{port}"
        made = httpx.post(f"{url}/rollouts", json={"task": "2+2?"}, headers={"authorization": f"Bearer {key}"}).json()
        with openai.OpenAI(base_url=made["base_url"], api_key=made["api_key"]) as client:
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "2+2?"}])
        assert reply.choices[0].message.content
        log = CallLog(tmp_path / "run" / CALL_LOG_NAME)
        assert len(log.steps(made["id"])) == 1
        log.close()
        with Store(tmp_path / "run") as store:
            assert store.get(made["id"]).task.question == "2+2?"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
