"""Host tools and the gateway the sandboxed kernel calls them through.

from workbench.tools import InMemoryRetriever, ToolGateway, ToolRegistry, search_tool, tool

registry = ToolRegistry([search_tool(InMemoryRetriever(docs))])   # + submit_final_answer
async with ToolGateway(registry, rollout_dir / "run" / "gateway.sock", rollout_id=rid) as gw:
    await kernel.execute(gw.setup_code())
    ...
"""

from workbench.tools.builtins import InMemoryRetriever, format_hits, search_tool
from workbench.tools.gateway import ToolGateway
from workbench.tools.registry import Tool, ToolRegistry, make_tool, tool
from workbench.tools.setup_cell import SNAPSHOT_EXPRESSION, setup_code, snapshot_from_user_expression

__all__ = [
    "SNAPSHOT_EXPRESSION",
    "InMemoryRetriever",
    "Tool",
    "ToolGateway",
    "ToolRegistry",
    "format_hits",
    "make_tool",
    "search_tool",
    "setup_code",
    "snapshot_from_user_expression",
    "tool",
]
