"""Reading a real MCP client's tool results in tests: the structured answer, or the text of a refusal."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def structured(result: types.CallToolResult) -> Any:
    assert not result.is_error, result.content[0].text if result.content else result
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


def error_text(result: types.CallToolResult) -> str:
    assert result.is_error
    return " ".join(block.text for block in result.content if hasattr(block, "text"))
