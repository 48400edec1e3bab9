"""Two small OpenEnv environments written against openenv-core's own `Environment` base (OpenEnv's example
envs live in its GitHub repo, not on PyPI, and tests never download), and a scripted player for each.

- `EchoEnvironment`: OpenEnv's echo env: echoes the message, reward 0.1 per character, never done.
- `GuessEnvironment`: guess-the-number from 1 to 16 (the secret from `reset(seed=)` or `secret=`), "Higher
  than N." / "Lower than N." feedback, reward 1 when right, done when right or after 6 guesses.
- `bisect_guesser` plays the game from the feedback in its context; `echo_player` says "hi" each turn.
  `register()` names them `scripted:guesser` and `scripted:echo` (for `--plugin openenv_games`).
"""

from __future__ import annotations

import random
import re
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.rubrics import Rubric

LOW, HIGH, GUESSES = 1, 16, 6


class EchoAction(Action):
    message: str


class EchoObservation(Observation):
    echoed_message: str = ""
    message_length: int = 0


class EchoEnvironment(Environment[EchoAction, EchoObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        return EchoObservation(echoed_message="Echo ready: say something.")

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        self._state.step_count += 1
        text = action.message
        return EchoObservation(echoed_message=text, message_length=len(text), reward=0.1 * len(text))

    @property
    def state(self) -> State:
        return self._state


class GuessAction(Action):
    guess: str
    note: str | None = None  # optional: the model's text goes to `guess`, the one required str field


class GuessObservation(Observation):
    prompt: str


class GuessEnvironment(Environment[GuessAction, GuessObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(step_count=0)
        self.secret = LOW

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, secret: int | None = None, **kwargs: Any
    ) -> GuessObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        self.secret = int(secret) if secret is not None else random.Random(seed).randint(LOW, HIGH)
        return GuessObservation(prompt=f"Guess a number from {LOW} to {HIGH}. Answer with the number only.")

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> GuessObservation:
        self._state.step_count += 1
        out_of_guesses = self._state.step_count >= GUESSES
        found = re.search(r"-?\d+", action.guess)
        if found is None:
            return GuessObservation(prompt="Say a number.", reward=0.0, done=out_of_guesses)
        guess = int(found.group())
        if guess == self.secret:
            return GuessObservation(prompt=f"Correct: {guess}.", reward=1.0, done=True)
        hint = f"Higher than {guess}." if guess < self.secret else f"Lower than {guess}."
        return GuessObservation(prompt=hint, reward=0.0, done=out_of_guesses)

    @property
    def state(self) -> State:
        return self._state


def bisect_guesser(context: str, turn: int) -> str:
    """The middle of the range the feedback in `context` still allows."""
    low, high = LOW, HIGH
    for word, number in re.findall(r"(Higher|Lower) than (-?\d+)", context):
        if word == "Higher":
            low = max(low, int(number) + 1)
        else:
            high = min(high, int(number) - 1)
    return str((low + high) // 2)


def echo_player(context: str, turn: int) -> str:
    return "hi"


def register() -> None:
    from workbench.policies import ScriptedPolicy, register_scripted

    register_scripted("guesser", lambda: ScriptedPolicy(bisect_guesser, name="guesser"))
    register_scripted("echo", lambda: ScriptedPolicy(echo_player, name="echo"))


class NumberOnly(Rubric):
    def forward(self, action: GuessAction, observation: GuessObservation) -> float:
        return float(action.guess.strip().isdigit())


class GuessRubric(Rubric):
    """0.9 for the right number, 0.1 for answering with a number only (the `format` sub-rubric)."""

    def __init__(self) -> None:
        super().__init__()
        self.format = NumberOnly()

    def forward(self, action: GuessAction, observation: GuessObservation) -> float:
        return 0.9 * float(observation.prompt.startswith("Correct")) + 0.1 * self.format(action, observation)


class RubricGuessEnvironment(GuessEnvironment):
    """Guess-the-number whose reward comes from its `GuessRubric`, as OpenEnv's rubric environments do."""

    def __init__(self) -> None:
        super().__init__()
        self.rubric = GuessRubric()

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> GuessObservation:
        observation = super().step(action, timeout_s)
        observation.reward = self._apply_rubric(action, observation)
        return observation
