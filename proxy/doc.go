// Package proxy tests a user's own agent through the model traffic it
// already sends. The agent points its base URL (OPENAI_BASE_URL,
// ANTHROPIC_BASE_URL or its own setting) at the proxy, which forwards each
// request to the model the user named and relays the answer, streamed or
// not, in the OpenAI Chat Completions, OpenAI Responses and Anthropic
// Messages formats.
//
// On the way in, the proxy rewrites the results of the tool calls that the
// experiment's taint rules select: the payload, crafted by pikit's attack
// and channel, is appended to, prepended to, inserted in or replaces what
// the agent's own tool returned, and the cell's defense is applied there.
// On the way out, it reads the tool calls the model asks for and records
// those of sink tools. It never executes anything: the agent runs its own
// tools, and the proxy only sees, and records, what the model asked for.
//
// The proxy holds pikit's API key; the agent does not. The agent's own
// credentials are dropped from what it sends (and pikit's key added, for
// the named upstream alone: redirects are relayed to the agent, never
// followed), a Driver gives the agent a placeholder key and none of the
// user's other secrets, and requests a web page could send (another Host,
// DNS rebinding; an Origin not on this machine) are refused before
// anything is read.
//
// One agent run is one session, and one session is one cell of a plan. A
// Driver runs an agent command once per cell (pikit proxy run); Serve
// hands cells to sessions that agents open themselves (pikit proxy serve).
// Either way the recorded trace goes to pikit's judge and results are
// ordinary pikit results. Each model request takes from the run's budget
// (--max-requests, --max-tokens) before it is forwarded: one past it is
// not sent, the agent gets 429 saying why, and the cell is recorded as
// stopped by the budget.
package proxy
