package result

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/judge"
)

// The CSV format of results: one row per result under Columns, the trace
// left out. Each column is defined once, below, with how a result's cell
// is written and how a cell is read back; the writer and the reader go
// through the same table.

// column is a column of the CSV format.
type column struct {
	name string
	// cell is the result's value in this column.
	cell func(r *Result) (string, error)
	// read reads a cell into the row being read; the cell is "" when
	// the file has no such column.
	read func(c *csvRow, cell string) error
}

// csvRow is a result being read from a CSV row, with what it was judged
// against and its metadata gathered apart until the row is read.
type csvRow struct {
	res                 Result
	ja                  JudgedAgainst
	requireSink, fuzzy  string // read once the row is known to have a task
	bench, labels, args string
}

// Columns returns the CSV format's column names, in order: the Python
// pikit's flat columns first, then pikit's own.
func Columns() []string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.name
	}
	return names
}

// str is a column holding a string field.
func str(name string, f func(r *Result) *string) column {
	return column{name: name,
		cell: func(r *Result) (string, error) { return *f(r), nil },
		read: func(c *csvRow, v string) error { *f(&c.res) = v; return nil }}
}

// flag is a column holding a boolean, written True or False as the Python
// pikit writes them and read in any case; an empty cell is false.
func flag(name string, f func(r *Result) *bool) column {
	return column{name: name,
		cell: func(r *Result) (string, error) { return pyBool(*f(r)), nil },
		read: func(c *csvRow, v string) (err error) { *f(&c.res), err = readFlag(name, v, true); return err }}
}

// integer is a column holding an integer; an empty cell is 0.
func integer[T int | int64](name string, f func(r *Result) *T) column {
	return column{name: name,
		cell: func(r *Result) (string, error) { return strconv.FormatInt(int64(*f(r)), 10), nil },
		read: func(c *csvRow, v string) error {
			if v == "" {
				*f(&c.res) = 0
				return nil
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || int64(T(n)) != n {
				return fmt.Errorf("column %q: want an integer, got %s", name, describeCell(v))
			}
			*f(&c.res) = T(n)
			return nil
		}}
}

// against is a column of what the verdict was judged against: empty when
// the result does not say.
func against(name string, cell func(j *JudgedAgainst) (string, error), read func(c *csvRow, v string)) column {
	return column{name: name,
		cell: func(r *Result) (string, error) {
			if r.JudgedAgainst == nil {
				return "", nil
			}
			return cell(r.JudgedAgainst)
		},
		read: func(c *csvRow, v string) error { read(c, v); return nil }}
}

var columns = []column{
	str("attack", func(r *Result) *string { return &r.Attack }),
	str("defense", func(r *Result) *string { return &r.Defense }),
	str("channel", func(r *Result) *string { return &r.Channel }),
	str("agent", func(r *Result) *string { return &r.Agent }),
	str("target", func(r *Result) *string { return &r.Target }),
	// The verdict: read after the outcome (see FromCSV).
	{name: "success", cell: func(r *Result) (string, error) { return pyBool(r.Success), nil },
		read: func(c *csvRow, v string) error { return nil }},
	str("confidence", func(r *Result) *string { return &r.Confidence }),
	flag("sink_fired", func(r *Result) *bool { return &r.SinkFired }),
	str("reason", func(r *Result) *string { return &r.Reason }),
	{name: "signals", cell: func(r *Result) (string, error) { return strings.Join(r.Signals, ";"), nil },
		read: func(c *csvRow, v string) error {
			if v != "" {
				c.res.Signals = strings.Split(v, ";")
			}
			return nil
		}},
	str("final_text", func(r *Result) *string { return &r.FinalText }),
	str("timestamp", func(r *Result) *string { return &r.Timestamp }),
	str("key", func(r *Result) *string { return &r.Key }),
	{name: "outcome", cell: func(r *Result) (string, error) { return string(r.Outcome), nil },
		read: func(c *csvRow, v string) error {
			if c.res.Outcome = judge.Outcome(v); v != "" && !c.res.Outcome.Valid() {
				return fmt.Errorf("column \"outcome\": want %s; got %s", wantOutcome, describeCell(v))
			}
			return nil
		}},
	str("case_id", func(r *Result) *string { return &r.CaseID }),
	str("case_description", func(r *Result) *string { return &r.CaseDescription }),
	str("task", func(r *Result) *string { return &r.Task }),
	integer("repeat_index", func(r *Result) *int { return &r.RepeatIndex }),
	integer("seed", func(r *Result) *int64 { return &r.Seed }),
	str("run_id", func(r *Result) *string { return &r.RunID }),
	integer("latency_ms", func(r *Result) *int64 { return &r.LatencyMS }),
	integer("prompt_tokens", func(r *Result) *int { return &r.Usage.PromptTokens }),
	integer("completion_tokens", func(r *Result) *int { return &r.Usage.CompletionTokens }),
	str("error", func(r *Result) *string { return &r.Error }),
	integer("model_latency_ms", func(r *Result) *int64 { return &r.ModelLatencyMS }),
	integer("attempts", func(r *Result) *int { return &r.Attempts }),
	integer("retries", func(r *Result) *int { return &r.Retries }),
	// What the verdict was judged against, so a CSV file can be
	// re-scored.
	against("payload", func(j *JudgedAgainst) (string, error) { return j.Payload, nil },
		func(c *csvRow, v string) { c.ja.Payload = v }),
	against("canary", func(j *JudgedAgainst) (string, error) { return j.Canary, nil },
		func(c *csvRow, v string) { c.ja.Canary = v }),
	against("sink_args", func(j *JudgedAgainst) (string, error) {
		if len(j.SinkArgs) == 0 {
			return "", nil
		}
		b, err := json.Marshal(j.SinkArgs)
		return string(b), err
	}, func(c *csvRow, v string) { c.args = v }),
	against("require_sink", func(j *JudgedAgainst) (string, error) { return pyBool(j.RequireSink), nil },
		func(c *csvRow, v string) { c.requireSink = v }),
	against("canary_regex", func(j *JudgedAgainst) (string, error) { return j.CanaryRegex, nil },
		func(c *csvRow, v string) { c.ja.CanaryRegex = v }),
	against("judge_criteria", func(j *JudgedAgainst) (string, error) { return j.Criteria, nil },
		func(c *csvRow, v string) { c.ja.Criteria = v }),
	against("canary_fuzzy", func(j *JudgedAgainst) (string, error) {
		if j.CanaryFuzzy == 0 {
			return "", nil
		}
		return strconv.Itoa(j.CanaryFuzzy), nil
	}, func(c *csvRow, v string) { c.fuzzy = v }),
	// The case's benchmark and labels (a JSON object), so reports group
	// by them and give a benchmark's own rates from a CSV file too.
	{name: "benchmark", cell: func(r *Result) (string, error) {
		bench, _ := r.Metadata["benchmark"].(string)
		return bench, nil
	}, read: func(c *csvRow, v string) error { c.bench = v; return nil }},
	{name: "labels", cell: func(r *Result) (string, error) {
		l, ok := r.Metadata["labels"].(map[string]any)
		if !ok || len(l) == 0 {
			return "", nil
		}
		b, err := json.Marshal(l)
		return string(b), err
	}, read: func(c *csvRow, v string) error { c.labels = v; return nil }},
	integer("success_count", func(r *Result) *int { return &r.SuccessCount }),
	integer("total_runs", func(r *Result) *int { return &r.TotalRuns }),
	flag("model_complied", func(r *Result) *bool { return &r.ModelComplied }),
	flag("runtime_blocked", func(r *Result) *bool { return &r.RuntimeBlocked }),
}

// AppendCSV appends r's cells, in the order of Columns, to row.
func (r *Result) AppendCSV(row []string) ([]string, error) {
	for _, c := range columns {
		v, err := c.cell(r)
		if err != nil {
			return row, fmt.Errorf("column %q: %w", c.name, err)
		}
		row = append(row, v)
	}
	return row, nil
}

// FromCSV reads a result from a CSV row: get returns the cell of a column
// and whether the file has that column. The verdict must be one: an
// outcome cell, when there is one and it is not empty, holds one of
// judge.Outcomes, and a success cell holds true or false (in any case: the
// Python pikit writes True and False), true exactly when the outcome
// counts as a success (a repeat-summary row, which is no cell, aside);
// without an outcome the success cell is the verdict. Other typed cells
// (the flags, the integers) are empty or of their type. The error names
// the column.
func FromCSV(get func(name string) (string, bool)) (Result, error) {
	var c csvRow
	var bad error
	for _, col := range columns {
		v, _ := get(col.name)
		if err := col.read(&c, v); err != nil {
			if col.name == "outcome" {
				return c.res, err
			}
			if bad == nil {
				bad = err
			}
		}
	}
	success, hasSuccess := get("success")
	if c.res.Outcome == "" && !hasSuccess {
		return c.res, fmt.Errorf("the \"outcome\" cell is empty and there is no \"success\" column: want %s", wantOutcome)
	}
	if hasSuccess {
		var err error
		if c.res.Success, err = readFlag("success", success, false); err != nil {
			return c.res, err
		}
		if !slices.Contains(c.res.Signals, RepeatSummarySignal) {
			if err := agree(c.res.Outcome, c.res.Success); err != nil {
				return c.res, err
			}
		}
	}
	if bad != nil {
		return c.res, bad
	}
	// What the verdict was judged against, when the file says.
	if c.ja.Payload != "" || c.ja.Canary != "" || c.args != "" || c.ja.CanaryRegex != "" {
		j := c.ja
		j.Task = c.res.Task
		var err error
		if j.RequireSink, err = readFlag("require_sink", c.requireSink, true); err != nil {
			return c.res, err
		}
		if c.fuzzy != "" {
			n, err := strconv.Atoi(c.fuzzy)
			if err != nil || n < 0 || n > 100 {
				return c.res, fmt.Errorf("column \"canary_fuzzy\": want a score from 0 to 100, got %s", describeCell(c.fuzzy))
			}
			j.CanaryFuzzy = n
		}
		if c.args != "" {
			if err := json.Unmarshal([]byte(c.args), &j.SinkArgs); err != nil {
				return c.res, fmt.Errorf("column \"sink_args\": want a JSON object of strings, got %s", describeCell(c.args))
			}
		}
		c.res.JudgedAgainst = &j
	}
	if c.bench != "" || c.labels != "" {
		c.res.Metadata = map[string]any{}
		if c.bench != "" {
			c.res.Metadata["benchmark"] = c.bench
		}
		if c.labels != "" {
			var l map[string]any
			if err := json.Unmarshal([]byte(c.labels), &l); err != nil {
				return c.res, fmt.Errorf("column \"labels\": want a JSON object, got %s", describeCell(c.labels))
			}
			c.res.Metadata["labels"] = l
		}
	}
	return c.res, nil
}

// readFlag reads a boolean cell: true or false in any case, or empty (false)
// when optional.
func readFlag(name, v string, optional bool) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"), v == "" && optional:
		return false, nil
	}
	return false, fmt.Errorf("column %q: want true or false, got %s", name, describeCell(v))
}

// pyBool spells a boolean as the Python pikit's CSV files do: True,
// False.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// describeCell shows a cell's value in an error, "an empty cell" for "".
func describeCell(v string) string {
	if v == "" {
		return "an empty cell"
	}
	return Describe([]byte(v))
}
