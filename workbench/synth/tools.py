"""QA synthesis as REPL tools: a model drives the loop as code in its NB-Agent kernel.

    session = SynthesisEpisode(graph, verifier, seed_url)
    registry = session.tools()          # browse, links, inject, fuzz, verify, submit (final)
    # in the kernel:  print(links(url)); print(inject("Vel Orun", via, "director")); print(verify()); submit()

    result = run_repl_synthesis(graph, policy, direct_policy, seeds=[url, ...], config=..., store=...)

Tools run on the host (the kernel keeps its no-network profile). A wrong call (unknown key, a
target not in the question, verify() with nothing pending) raises a `ToolError` the model sees in
its output and the trajectory records; nothing a model writes can crash the run. The trajectory is
the NB-Agent episode, stored with role "synthesizer", its edit history in `metadata["synthesis"]`
and every direct attempt of every verify() linked as a child. `repl_teacher(session)` is the
scripted synthesizer that drives the tools in tests (one edit and its verify() per turn).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from workbench._lazy import moved_names
from workbench.errors import ToolError
from workbench.synth.config import SynthesisConfig
from workbench.synth.edits import apply_edit, edit_options, seed_qa
from workbench.synth.loop import Synthesis, SynthesisResult, _finish, attempt_trajectories, write_qa
from workbench.synth.pages import PageGraph
from workbench.synth.qa import SynthQA
from workbench.synth.synthesizers import ScriptedSynthesizer
from workbench.synth.verify import DirectSolver, Verdict, Verifier
from workbench.templates import prompt_template
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.agent.config import AgentConfig
    from workbench.policies.base import Policy
    from workbench.store import Store


class SynthesisEpisode:
    """The host-side state of one REPL synthesis: the kept QA, a pending edit, the history."""

    def __init__(
        self,
        graph: PageGraph,
        verifier: Verifier,
        seed_url: str,
        *,
        config: SynthesisConfig | None = None,
        window_chars: int = 4000,
    ) -> None:
        self.graph, self.verifier, self.seed_url = graph, verifier, seed_url
        self.config = config or SynthesisConfig()
        self.window_chars = window_chars
        self.qa: SynthQA = seed_qa(graph, seed_url)
        seed = verifier.check(self.qa, self.qa.statements)
        self.seed_ok = seed.ok or seed.reason == "too_easy"
        self.seed_accuracy = self.accuracy = seed.direct_accuracy
        self.pending: tuple[dict[str, Any], SynthQA] | None = None
        self.history: list[dict[str, Any]] = [
            {
                "action": "seed",
                "url": seed_url,
                "question": self.qa.question,
                "kept": self.seed_ok,
                "reason": None if self.seed_ok else seed.reason,
                "direct_accuracy": seed.direct_accuracy,
            }
        ]
        self.verdicts: list[tuple[int, Verdict, SynthQA]] = [(0, seed, self.qa)]
        self.submitted = False

    # -- the tools ----------------------------------------------------------------------------
    def browse(self, url: str, page: int = 1) -> str:
        """Read a page as Markdown, one window at a time: `>>>> Page i/n >>>>` then the text."""
        wins = self.graph.page(url).windows(self.window_chars)
        if not 1 <= page <= len(wins):
            raise ToolError(f"page={page}: {url} has {len(wins)} window(s); use 1 to {len(wins)}")
        return wins[page - 1]

    def links(self, url: str) -> str:
        """The facts that link the page at `url` to other pages, both ways, one per line:
        `key: Title <url>` (this page's fact) and `<- Title <url> key` (a page whose fact names this one)."""
        info = self.graph.info(url)
        out = [f"{info.title} ({info.kind or 'page'})"]
        out += [f"{f.key}: {f.value} <{f.value_url}>" if f.value_url else f"{f.key}: {f.value}" for f in info.facts]
        out += [f"<- {f.subject} <{f.subject_url}> {f.key}" for f in self.graph.in_links(info.url)]
        return "\n".join(out)

    def inject(self, target: str, via: str, key: str, extra: str = "") -> str:
        """Propose an edit: replace `target` (an entity named in the question) by a description through the
        linked page `via` and its fact `key` (see links()). Call verify() to keep it."""
        return self._propose({"action": "inject", "target": target, "via": via, "key": key, "extra": extra})

    def fuzz(self, key: str) -> str:
        """Propose an edit: blur the number the question gives for `key` (1952 → the early 1950s → the 1950s).
        Call verify() to keep it."""
        return self._propose({"action": "fuzz", "key": key})

    def verify(self) -> str:
        """Check the pending edit; it is kept only if every check passes. Returns the verdict and the question."""
        if self.pending is None:
            raise ToolError("nothing to verify: propose an edit with inject(...) or fuzz(...) first")
        action, cand = self.pending
        self.pending = None
        verdict = self.verifier.check(cand, cand.statements[len(self.qa.statements) :])
        self.verdicts.append((len(self.history), verdict, cand))
        self.history.append(
            {
                **action,
                "question": cand.question,
                "kept": verdict.ok,
                "reason": verdict.reason,
                "direct_accuracy": verdict.direct_accuracy,
            }
        )
        if verdict.ok:
            self.qa, self.accuracy = cand, verdict.direct_accuracy
        return f"{verdict.summary()}\nQA: {self.qa.question} | facts: {self.qa.hops}"

    def submit(self) -> str:
        """Submit the last kept question; this ends the episode."""
        self.submitted = True
        return f"Submitted: {self.qa.question}"

    def _propose(self, action: dict[str, Any]) -> str:
        cand = apply_edit(self.graph, self.qa, action)
        self.pending = (action, cand)
        return f"pending: {cand.question}"

    def tools(self) -> Any:
        from workbench.tools import ToolRegistry, make_tool

        return ToolRegistry(
            [
                make_tool(self.browse, name="browse"),
                make_tool(self.links, name="links"),
                make_tool(self.inject, name="inject"),
                make_tool(self.fuzz, name="fuzz"),
                make_tool(self.verify, name="verify"),
                make_tool(self.submit, name="submit", final=True),
            ]
        )

    # -- the record ---------------------------------------------------------------------------
    def task(self) -> Task:
        prompt = prompt_template("workbench.synth", "repl_task.j2").render(
            question=self.qa.question if not self.history[1:] else self.history[0]["question"],
            answer=self.qa.answer,
            url=self.seed_url,
        )
        return Task(
            id=f"synth-{abs(hash((self.seed_url, self.qa.question))) % 10**10}",
            question=prompt.strip(),
            golden_answers=[self.qa.answer],
            metadata={
                "hops": self.qa.hops,
                "seed_url": self.seed_url,
                "source": "synthesis",
                "iteration": self.config.iteration,
            },
        )

    def finish(self, traj: Trajectory, run_id: str = "") -> Synthesis:
        """Fill `traj` (the episode) with the synthesis record; returns it with the attempt trajectories."""
        policy_name = getattr(getattr(self.verifier.direct, "policy", None), "name", "")
        attempts = [
            a for step, v, qa in self.verdicts for a in attempt_trajectories(v, qa, traj.id, step, run_id, policy_name)
        ]
        traj.role = "synthesizer"
        traj.metadata.update(iteration=self.config.iteration, seed_url=self.seed_url)
        acc = self.accuracy
        accepted = (
            self.seed_ok
            and self.submitted
            and self.qa.hops >= self.config.min_hops
            and acc is not None
            and acc <= self.config.max_direct_accuracy
        )
        termination, error = traj.termination, traj.error
        s = _finish(
            traj, self.qa, accepted, acc, self.seed_accuracy, self.history, attempts, termination or "max_steps", error
        )
        traj.termination = termination or traj.termination
        return s


def repl_teacher(session: SynthesisEpisode, *, target_hops: int = 3, seed: int = 0) -> Any:
    """A scripted NB-Agent synthesizer bound to `session` (privileged: it reads the options from the
    session): turn 0 reads the seed page's links, then each turn proposes one edit and verifies it,
    and it submits once the QA is hard with `target_hops` facts or nothing is left to try."""
    from workbench.policies.scripted import ScriptedPolicy

    chooser = ScriptedSynthesizer(target_hops=target_hops, seed=seed)
    rejected: list[dict[str, Any]] = []

    def turn(_context: str, n: int) -> str:
        if n == 0:
            return (
                "<think>Look at what links to the seed page.</think>\n"
                f"<code>\nprint(links({session.seed_url!r}))\n</code>"
            )
        if session.history[-1].get("kept") is False and session.history[-1]["action"] != "seed":
            rejected.append(
                {k: v for k, v in session.history[-1].items() if k in ("action", "target", "via", "key", "extra")}
            )
        ready = session.accuracy == 0.0 and session.qa.hops >= session.config.min_hops
        action = json.loads(chooser.choose(session.qa, edit_options(session.graph, session.qa), ready, rejected))
        if action["action"] == "exit":
            return "<think>The question is hard enough.</think>\n<code>\nsubmit()\n</code>"
        if action["action"] == "fuzz":
            call = f"fuzz({action['key']!r})"
        else:
            call = f"inject({action['target']!r}, {action['via']!r}, {action['key']!r}, {action.get('extra', '')!r})"
        return f"<think>Try {action['action']}.</think>\n<code>\nprint({call})\nprint(verify())\n</code>"

    return ScriptedPolicy(turn, name="repl-synthesizer-teacher")


async def arun_repl_synthesis(
    graph: PageGraph,
    policy: Policy | Callable[[SynthesisEpisode], Policy],
    direct_policy: Policy,
    *,
    seeds: list[str],
    config: SynthesisConfig | None = None,
    store: Store | None = None,
    agent_config: AgentConfig | None = None,
    concurrency: int = 2,
) -> SynthesisResult:
    """One NB-Agent synthesis episode per seed url; `policy` is a Policy or a factory `session -> Policy`."""
    from workbench.agent.config import AgentConfig
    from workbench.agent.local import kernel_pool
    from workbench.agent.runner import NBAgent

    config = config or SynthesisConfig()
    config.validate()
    agent_config = agent_config or AgentConfig(max_steps=config.max_edits + 2, max_context_tokens=16384)
    verifier = Verifier(
        graph,
        DirectSolver(direct_policy, n=config.direct_attempts, temperature=config.direct_temperature, seed=config.seed),
        max_direct_accuracy=config.max_direct_accuracy,
    )
    run_id = config.resolved_run_id
    sem = asyncio.Semaphore(concurrency)
    async with kernel_pool(agent_config, concurrency) as pool:

        async def one(url: str) -> Synthesis:
            async with sem:
                session = await asyncio.to_thread(SynthesisEpisode, graph, verifier, url, config=config)
                factory = callable(policy) and not hasattr(policy, "generate")  # a Policy may be callable too
                pol = policy(session) if factory and callable(policy) else cast("Policy", policy)
                agent = NBAgent(
                    pol,
                    tools=session.tools(),
                    config=agent_config,
                    pool=pool,
                    run_id=run_id,
                    role="synthesizer",
                    concurrency=1,
                )
                traj = await agent.run_one(session.task())
                s = session.finish(traj, run_id)
                if store is not None:
                    store.write(traj)
                    if s.attempts:
                        store.write_many(s.attempts)
                return s

        out = await asyncio.gather(*(one(u) for u in seeds))
    run_dir = Path(config.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    result = SynthesisResult(run_dir / "qa.jsonl", list(out))
    write_qa(result.qa_path, result.rows)
    if store is not None:
        store.log_metrics(run_id, config.iteration, result.stats())
    return result


def run_repl_synthesis(*args: Any, **kwargs: Any) -> SynthesisResult:
    """Sync wrapper of `arun_repl_synthesis` (notebooks, scripts)."""
    from workbench.kernel.sync import run_sync

    return run_sync(arun_repl_synthesis(*args, **kwargs))


__all__ = ["SynthesisEpisode", "arun_repl_synthesis", "repl_teacher", "run_repl_synthesis"]


# "session" is the outward side only (docs/glossary.md)
__getattr__ = moved_names(__name__, {"SynthesisSession": "workbench.synth.tools:SynthesisEpisode"})
