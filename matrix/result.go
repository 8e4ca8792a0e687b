package matrix

import "github.com/pikit-go/pikit/result"

// Result is the outcome of one cell: result.Result, whose package owns the
// result line's format (JSON, CSV columns, the readers' field table).
type Result = result.Result

// JudgedAgainst is the task a cell's verdict was decided against.
type JudgedAgainst = result.JudgedAgainst

// Sink receives each result as it completes. An error stops the run.
type Sink func(Result) error
