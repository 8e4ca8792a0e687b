// Package agentrt runs a user's own agent as a subprocess for each cell,
// speaking the Python pikit's fixture protocol, and turns what the agent
// reports into an agent.Trace the judge reads like any other.
//
// A config chooses a runtime with the Python pikit's keys: runtime
// ("command", "openclaw" or "hermes"), runtime_options and fixture. For
// each cell the Driver makes a fresh directory, hands the agent the
// cell's payload in PIKIT_FIXTURE_PAYLOADS (a JSON object, fixture key →
// text, after the cell's defense: a detector that flags it withholds it),
// names a trace file in PIKIT_FIXTURE_TRACE_PATH, and runs the command
// line in a process group of its own, bounded by a timeout. The agent
// appends one JSON object per line to the trace file, with a type (or
// event) among tool_result, sink_call, policy_block, approval_requested,
// tool_error and final; its answer is the end of its stdout unless a
// final event gives it.
//
// The channel → fixture mapping is recorded in each trace: a channel
// whose carrier is a kind of data the agent reads (email_headers → the
// "email" fixture) is native; any other payload goes in the runtime's
// default fixture as a fallback.
//
// The trace file is written by the agent under test, whose tools return
// attacker-controlled text: it is parsed within Limits, nothing in it is
// executed, and no path in it is opened.
//
// Init and InstallFixture set up a runtime's profile, which may be
// someone else's: pikit's fixture plugin is written fresh into it (a
// folder holding files of theirs, or links in pikit's place, is refused
// with a *ProfileError; nothing is written outside the profile or through
// a link), OpenClaw's plugin is built from the dependencies its lockfile
// pins with no package's install script, and no program started gets the
// secrets of pikit's environment.
//
// The command lines of openclaw and hermes, and the variables that give
// each cell an isolated profile, are our best reading of those CLIs: the
// Python pikit's own are not available to us. Every part is overridable
// through runtime_options.
package agentrt
