package mcpserve

import (
	"context"
	"errors"
	"os"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// Prepare crafts one cell exactly as the matrix runner does for a driver
// (the attack, the channel and its data sample, the defense's hooks) and
// returns what the driver would get, without running an agent: pikit mcp
// serve serves one cell this way. No model is contacted; a file-mode
// carrier is written to a temporary directory that is removed again
// (Delivery keeps its content).
func Prepare(ctx context.Context, cell matrix.Cell) (matrix.Drive, error) {
	dir, err := os.MkdirTemp("", "pikit-mcp-")
	if err != nil {
		return matrix.Drive{}, err
	}
	defer os.RemoveAll(dir)
	var got *matrix.Drive
	capture := driverFunc(func(_ context.Context, d matrix.Drive) (agent.Trace, error) {
		got = &d
		return agent.Trace{Agent: d.Cell.Agent}, nil
	})
	r := matrix.Runner{
		Concurrency: 1, Driver: capture, WorkDir: dir, RunID: "prepare",
		// The agent is the client's: the cell's target is never asked.
		Open: func(string, target.Options) (target.Target, error) { return target.Open("mock", nil) },
	}
	orig := cell.Config
	cfg := *orig
	cfg.JudgeType = "none"
	cell.Config = &cfg
	res, err := r.RunAll(ctx, []matrix.Cell{cell})
	if err != nil {
		return matrix.Drive{}, err
	}
	if got == nil {
		msg := "the cell could not be crafted"
		if len(res) == 1 && res[0].Error != "" {
			msg = res[0].Error
		}
		return matrix.Drive{}, errors.New(msg)
	}
	got.Cell.Config = orig
	return *got, nil
}

type driverFunc func(context.Context, matrix.Drive) (agent.Trace, error)

func (f driverFunc) Drive(ctx context.Context, d matrix.Drive) (agent.Trace, error) { return f(ctx, d) }
