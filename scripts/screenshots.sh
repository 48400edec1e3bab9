#!/usr/bin/env bash
# Refreshes the docs' pictures: runs the real-browser tests (JupyterLab in Chromium), which write their
# screenshots to test-artifacts/, then copies the ones the docs show to docs/images/.
#   make screenshots
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# name in test-artifacts/ (and docs/images/): what it shows. tests/test_screenshots.py holds this list
# equal to docs/images/ and checks that a docs page shows each one.
SHOTS=(
  viewer_first      # the viewer: the list and one trajectory's turns
  viewer_tokens     # the token view: ids, logprobs, the env mask
  viewer_group      # a training step's group with its advantages
  viewer_compare    # two trajectories side by side, the divergent turn marked
  viewer_search     # full-text search over the run
  dashboard_plots   # the evolution dashboard
  tuner_plots       # the reward tuner
  launcher_curves   # the training launcher's live curves
  report            # the offline HTML report
)
rm -rf test-artifacts
"$PY" -m pytest tests/browser -q -p no:randomly
mkdir -p docs/images
for name in "${SHOTS[@]}"; do cp "test-artifacts/$name.png" "docs/images/$name.png"; done
echo "screenshots: ${#SHOTS[@]} pictures in docs/images/"
