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
// One agent run is one session, and one session is one cell of a plan. A
// Driver runs an agent command once per cell (pikit proxy run); Serve
// hands cells to sessions that agents open themselves (pikit proxy serve).
// Either way the recorded trace goes to pikit's judge and results are
// ordinary pikit results.
package proxy
