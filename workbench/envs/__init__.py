"""workbench's NB-Agent under other projects' environment standards.

- `workbench.envs.openenv`: an OpenEnv `Environment` (reset / step / state over one sandboxed kernel),
  served by `workbench.envs.server.EnvServer` or `workbench serve-env`;
- `workbench.envs.trl`: a TRL `environment_factory` (`tool_environment(host)`: one sandboxed kernel per
  generation; `run_code`, the host tools and `submit_final_answer` as tools) and `environment_reward`;
- `workbench.envs.session`: what they share (`EpisodeHost`: tools, reward, kernel pool; `EpisodeSession`:
  one episode driven a cell at a time, recorded as a `Trajectory`);
- the other way round, `workbench.envs.episodes`: `EnvEpisodes`, an episode runner that plays any workbench
  policy against an OpenEnv environment (`workbench.envs.source`: in process or served by URL) or a verifiers
  one (`workbench.envs.verifiers_source`: `verifiers:NAME`, run in the `.venv-verifiers` sidecar through
  `workbench.envs.verifiers_bridge`), as `--env` of `workbench run`, `eval` and `train`; every source speaks
  `workbench.envs.protocols` (`EnvSource`, `EnvEpisode`, `EnvReply`), and `workbench.envs.text` turns turns
  into actions and observations into text.

Submodules are imported on their own (`openenv-core` loads only with the ones that use it: openenv, server,
source, episodes; verifiers never loads here, only in its sidecar).
"""

from workbench.envs.session import EpisodeHost, EpisodeSession

__all__ = ["EpisodeHost", "EpisodeSession"]
