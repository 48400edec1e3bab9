import pytest
from reward_helpers import make_traj


@pytest.fixture
def traj():
    return make_traj
