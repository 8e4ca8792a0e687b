// Package mcpserve serves pikit's scenarios as an MCP server with poisoned
// tools, to test a real agent (any framework, any language) through the
// tools it really loads. Built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), it offers a scenario's tools
// with input schemas from their parameters: source tools answer with the
// scenario's data, and the poisoned tool carries the cell's crafted
// payload, in its result (PoisonResult), in its description or one of its
// parameters' descriptions (PoisonDescription), or in a description that
// changes after the first listing, with notifications/tools/list_changed
// (PoisonRugPull). Sink tools record the call and answer the scenario's
// harmless confirmation: nothing a client asks is ever executed.
//
// A Session is one agent run and records its trace (every listing and
// call, which carried the payload, which sinks fired) in pikit's
// agent.Trace, so the judge and reports read it like any other. ServeStdio
// and Handler serve a setup over stdio and streamable HTTP (pikit mcp
// serve); Runner is a matrix.Driver that runs an agent command per cell
// against the cell's own endpoint (pikit mcp run).
//
// Clients are untrusted: messages, arguments and the steps of a session
// are bounded (MaxMessageBytes, MaxArgumentBytes, MaxSteps), invalid
// arguments get a tool error, and agent commands run in a process group
// of their own that is killed when the cell ends. Over HTTP the sessions
// open at once are bounded too (ServeOptions.MaxSessions; a few per cell
// for a Runner), and so are a request's headers and body, in size and in
// time, and an idle connection (NewHTTPServer); over stdio a message too
// long is answered with a JSON-RPC error and skipped, and the session goes
// on. An agent command gets pikit's environment without its secrets
// (internal/agentenv) but for those the user names, and what it writes is
// redacted of the environment's API keys before it is kept.
package mcpserve
