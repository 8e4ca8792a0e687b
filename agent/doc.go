// Package agent runs the tool-calling loop that indirect prompt injection
// targets. A Scenario (email assistant, RAG, browser, coding agent, ...)
// offers the model tools; one of them, the taint point, returns attacker
// data. Sink tools are the actions an attacker wants (send_email,
// transfer_money, run_command, ...): they record the call and return a
// plausible confirmation, and never act. Run drives system prompt, user
// message, model, tool calls and tool results until a final answer or the
// step limit, applying defense hooks, and records everything in a Trace.
package agent
