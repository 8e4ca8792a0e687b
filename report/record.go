package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/result"
)

// Record is the part of a result that summaries, comparisons and gates
// read: the fields they group by, the verdict, and what pairs a cell with
// its counterpart in another run. The readers (Scan, ScanFile) fill it
// without decoding the rest of a result (its trace and its texts), so a
// large results file streams through in little memory; Result decodes the
// whole result when it is wanted.
type Record struct {
	result.Brief
	// Line is where the result is in its file: its JSONL line, the line
	// of a JSON array element's opening brace, or the line of its CSV row.
	Line int

	file   string         // the file's name, for errors
	raw    []byte         // the result's JSON text; valid during a Scan callback
	full   *matrix.Result // the whole result, when the reader has it
	noText bool           // a copy without raw or full: Result cannot decode it
}

// Result returns the whole result. In a Scan callback, call it during the
// callback: the text it decodes is not kept after it returns.
func (r *Record) Result() (matrix.Result, error) {
	if r.full != nil {
		return *r.full, nil
	}
	if r.noText {
		return matrix.Result{}, errNoText
	}
	var res matrix.Result
	if r.raw == nil {
		return res, nil
	}
	if err := json.Unmarshal(r.raw, &res); err != nil {
		return res, err
	}
	normalize(&res)
	return res, nil
}

// errNoText is the error of Result on a record kept without its text.
var errNoText = errors.New("the result's text was not kept (RecordDedup.KeepText)")

// RecordOf returns the Record of a result in memory; its Result returns
// the result itself.
func RecordOf(r *matrix.Result) Record {
	rec := recordOf(r)
	if r.MethodSpecs != nil {
		if b, err := result.SpecsKey(r.MethodSpecs); err == nil {
			rec.MethodSpecs = string(b)
		}
	}
	return rec
}

// recordOf is RecordOf without MethodSpecs, which only comparisons read.
func recordOf(r *matrix.Result) Record {
	rec := Record{Brief: result.Brief{
		Key: r.Key, Attack: r.Attack, Defense: r.Defense, Channel: r.Channel, Agent: r.Agent,
		Target: r.Target, CaseID: r.CaseID, Outcome: r.Outcome, Success: r.Success,
		Reason: r.Reason, Error: r.Error, RepeatIndex: r.RepeatIndex,
		Attempts: r.Attempts, Retries: r.Retries,
	}, full: r}
	if r.Utility != nil {
		rec.SetUtility(*r.Utility)
	}
	rec.RepeatSummary = slices.Contains(r.Signals, RepeatSummarySignal)
	rec.Benchmark, _ = r.Metadata["benchmark"].(string)
	if m, ok := r.Metadata["labels"].(map[string]any); ok {
		rec.Labels = make(map[string]string, len(m))
		for k, v := range m {
			if s, ok := v.(string); ok {
				rec.Labels[k] = s
			}
		}
	}
	if tr := r.TraceData; tr != nil {
		tools, failed := 0, 0
		for i := range tr.Steps {
			if tr.Steps[i].Kind == agent.StepTool {
				tools++
				if tr.Steps[i].Error != "" {
					failed++
				}
			}
		}
		rec.ToolCallsFailed = tools > 0 && failed == tools
	}
	rec.normalize()
	return rec
}

// Field returns the value of a grouping field (one of GroupFields, "case"
// for case_id, or "label:NAME" for a case label, "(none)" when the case has
// no such label); a direct cell's channel is "(direct)", and channel "" of
// a user's own agent (agent "proxy" or "runtime:…"), whose payload reaches
// a tool result as it is, "(payload only)".
func (r *Record) Field(name string) string {
	if label, ok := strings.CutPrefix(name, LabelPrefix); ok {
		if v, ok := r.Labels[label]; ok {
			return v
		}
		return "(none)"
	}
	switch name {
	case "attack":
		return r.Attack
	case "defense":
		return r.Defense
	case "channel":
		if r.Channel == "" {
			if r.Agent == "proxy" || strings.HasPrefix(r.Agent, "runtime:") {
				return "(payload only)"
			}
			return "(direct)"
		}
		return r.Channel
	case "agent":
		return r.Agent
	case "target":
		return r.Target
	case "case_id", "case":
		return r.CaseID
	case "outcome":
		return string(r.Outcome)
	}
	return ""
}

// detach returns a copy of r that stays valid after a Scan callback: its
// metadata, and with text the text its Result decodes, copied out of the
// reader's buffer. Without text, the copy's Result is an error.
func (r *Record) detach(text bool) Record {
	c := *r
	c.raw, c.full, c.noText = nil, nil, r.noText || !text
	if text {
		c.raw, c.full = bytes.Clone(r.raw), r.full
	}
	c.MetadataText = bytes.Clone(r.MetadataText)
	if r.Utility != nil {
		c.SetUtility(*r.Utility) // not the reader's copy of it
	}
	return c
}

// normalize fills in the case id the Python pikit's files carry only as a
// "[id] " prefix of the reason, as normalize does for a whole result.
func (r *Record) normalize() {
	if r.CaseID == "" {
		r.CaseID = caseFromReason(r.Reason)
	}
}

// counts says how a record counts toward the attack success rate. Runtime
// errors and unjudged cells are left out (and counted beside it), and so
// are benign baseline cells (attack "none"). A result without an outcome
// (the Python pikit's older files) counts by its success flag, or as an
// error when its reason says so.
func (r *Record) counts() (judged, success, failed bool) {
	switch r.Outcome {
	case judge.RuntimeError:
		return false, false, true
	case judge.NotJudged:
		return false, false, false
	case "":
		if strings.HasPrefix(r.Reason, "error:") || r.Error != "" {
			return false, false, true
		}
	}
	if r.benign() {
		return false, false, false
	}
	return true, r.Success, false
}

// benign reports whether a record is a benign baseline cell.
func (r *Record) benign() bool { return r.Attack == "none" }

// label names what a cell tried: case, agent, attack, defense, channel.
func (r *Record) label() string {
	var b []byte
	return string(r.appendLabel(b))
}

func (r *Record) appendLabel(b []byte) []byte {
	if r.CaseID != "" {
		b = append(append(b, r.CaseID...), " · "...)
	}
	b = append(append(b, r.Agent...), " · "...)
	b = append(append(b, r.Attack...), " · "...)
	b = append(append(b, r.Defense...), " · "...)
	return append(b, r.Field("channel")...)
}
