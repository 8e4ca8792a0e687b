// Package integration drives pikit with software pikit did not write: real
// agent frameworks (the openai and anthropic Python SDKs in hand-written
// tool loops, the OpenAI Agents SDK, LangChain) run through pikit proxy,
// and the Agents SDK's MCP client (the Python MCP SDK) against pikit mcp,
// installed from PyPI by the suite itself into a virtual environment of
// its own. It holds tests only.
//
// The suite skips, saying why, when python3 is missing or PyPI cannot be
// reached; with PIKIT_REQUIRE_AGENTS=1 (as .ci/run sets it) those are
// failures instead. PIKIT_AGENTS_VENV names the virtual environment to use
// or create (default: one in the user's cache directory, keyed by the
// pinned requirements).
package integration
