package matrix

import (
	"context"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/target"
)

// A Driver runs the agent of each cell in place of pikit's own tool loop.
// The interception proxy, the MCP server and the runtime harness drive a
// user's own agent, record what it did as a trace, and hand the trace back;
// the runner judges it and writes the result like any other, so budgets,
// resume, sharding, progress and reports work unchanged.
//
// Drive is called from the runner's workers, concurrently for different
// cells. It returns the trace so far together with any error: an error
// makes the cell a runtime_error result (or, when ctx ended, an interrupted
// cell with no result).
type Driver interface {
	Drive(ctx context.Context, d Drive) (agent.Trace, error)
}

// Drive is one cell as a Driver receives it: the payload already crafted,
// the defense already built.
type Drive struct {
	Cell Cell
	// Target is the cell's target, opened once per run and shared; its
	// requests count towards the run's budgets. It is also the cell's
	// share of those budgets (a target.Budget): a driver that forwards raw
	// HTTP takes each request from it before sending, and does not send
	// one it refuses.
	Target target.Target
	// Spend adds what a driver spent without Target: tokens, and requests
	// it could not take from Target's budget first (the proxy passes 0
	// requests when it took them).
	Spend func(requests, tokens int64)
	// Scenario is the cell's pikit scenario, nil for a driven config
	// (Config.Driven) whose agent is the user's own.
	Scenario *agent.Scenario
	// Benign marks the baseline cell (attack none): nothing is tainted.
	Benign bool
	// Payload is the attacker's task as the cell's attack words it.
	Payload string
	// Delivery is what a tainted tool result carries: the payload inside
	// the channel's carrier (data_sample or the channel's own sample), or
	// the payload alone for channel "".
	Delivery string
	// Path is the tainted file in file carrier mode, "" otherwise.
	Path string
	// Channel is the cell's channel, nil for channel "" and for the
	// baseline: a driver that hides the payload in a real tool result uses
	// it with that result as the carrier (Channel.Taint(result, Payload)).
	Channel channel.Channel
	// Hooks place the cell's defense: ToolResult (applied to a tool result
	// with Instruction) and Detectors (screening tool results).
	Hooks agent.Hooks
	// Instruction is the user's trusted request that defenses restate
	// (user_message; "" when the config gives none).
	Instruction string
	// Task is what the judge checks the trace against.
	Task judge.Task
}
