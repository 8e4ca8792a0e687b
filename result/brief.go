package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pikit-go/pikit/judge"
)

// Brief is the part of a result line that summaries, comparisons and gates
// read: the fields they group by, the verdict, and what pairs a cell with
// its counterpart in another run. A Decoder fills it without decoding the
// rest of the line (its trace and its texts), so a large results file
// streams through in little memory.
type Brief struct {
	Key, Attack, Defense, Channel, Agent, Target, CaseID string
	// Benchmark is the standard benchmark the result's case came from
	// (its metadata's "benchmark"), "" for none.
	Benchmark string
	// Labels are the case's labels (its metadata's "labels"), nil for
	// none.
	Labels map[string]string

	Outcome judge.Outcome
	Success bool
	// Utility is the result's utility verdict, nil when it has none.
	Utility *bool
	// Reason and Error say why a result without an outcome (the Python
	// pikit's older files) counts as an error.
	Reason, Error string
	RepeatIndex   int
	// Attempts and Retries are the model requests the cell sent and the
	// retries among them (0 in files written before pikit counted them).
	Attempts, Retries int
	// MethodSpecs is the result's method_specs as SpecsKey encodes them,
	// "" when it has none: part of what a cell tried, for pairing cells
	// across runs.
	MethodSpecs string
	// ToolCallsFailed is set when the cell's trace has tool calls and
	// every one of them failed (a tool the scenario lacks, arguments the
	// tool refused): the model never saw a tool's answer, so the cell's
	// verdict may say more about the scenario or the target than about
	// the model. A result without a trace (CSV) never sets it.
	ToolCallsFailed bool
	// RepeatSummary marks a repeat-summary row (signals holding
	// RepeatSummarySignal), which the Python pikit writes after a
	// combination's repeats and pikit with --repeat-summary: not a cell.
	RepeatSummary bool
	// MetadataText is the JSON text of the result's metadata, nil when
	// it has none: valid as long as the line Decode read.
	MetadataText []byte

	utility bool // what Utility points to
}

// SetUtility sets the utility verdict.
func (b *Brief) SetUtility(v bool) {
	b.utility = v
	b.Utility = &b.utility
}

// RepeatSummarySignal marks a repeat-summary row: the success count of a
// combination's repeats, written after them, not a cell of its own.
const RepeatSummarySignal = "repeat_summary"

// Decoder decodes result lines into Briefs, sharing the strings that
// repeat across lines (attack names, outcomes, method specs). Its zero
// value is ready to use; it is not safe for concurrent use.
type Decoder struct {
	intern map[string]string // values that repeat: attack names, outcomes, …
	specs  map[string]string // method_specs as written → SpecsKey's
}

// maxIntern bounds the interning tables: past it, new values are still
// decoded, just not shared.
const maxIntern = 4096

// What a result must carry to be read as one: a verdict and something
// naming the cell.
const wantResult = `a JSON object with "outcome" or "success" and at least one of "attack", "agent", "key"`

// wantOutcome lists the outcomes a result may have.
var wantOutcome = func() string {
	names := make([]string, len(judge.Outcomes))
	for i, o := range judge.Outcomes {
		names[i] = string(o)
	}
	return "one of " + strings.Join(names, ", ")
}()

// successOutcomes lists the outcomes that count as a success
// (judge.Outcome.Success): a result's success flag is true with them and
// false with every other.
var successOutcomes = func() string {
	var names []string
	for _, o := range judge.Outcomes {
		if o.Success() {
			names = append(names, string(o))
		}
	}
	return strings.Join(names, " and ")
}()

// agree refuses a verdict whose success flag says other than its outcome
// (success true with outcome "refused", false with "full_success"): which
// one to believe is a guess, and reports count the flag. A result without
// an outcome is judged by its flag alone.
func agree(outcome judge.Outcome, success bool) error {
	if outcome == "" || outcome.Success() == success {
		return nil
	}
	return fmt.Errorf("\"success\" and \"outcome\" disagree: success is %t, outcome %s; success is true exactly for %s", success, outcome, successOutcomes)
}

// Decode fills rec from one result line, decoding only the fields a Brief
// holds and checking the structure of the rest as it skips it. The line
// must be a JSON object with an "outcome" or "success" field and at least
// one of "attack", "agent" or "key"; fields of the wrong type are errors,
// and a verdict must be one: an outcome is one of judge.Outcomes (or "",
// for a result judged by its success flag alone, which must then be
// there), never null; a success flag is true or false, and true exactly
// when the outcome, if there is one, counts as a success (a repeat-summary
// row aside: it is no cell).
func (d *Decoder) Decode(b []byte, rec *Brief) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("want %s, got %s", wantResult, Describe(b[i:]))
	}
	var hasOutcome, hasSuccess, named bool
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return fmt.Errorf("want %s, got an empty object", wantResult)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return ErrSyntax
		}
		end, ok := stringEnd(b, i)
		if !ok {
			return ErrSyntax
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(b[i:end], &k) != nil {
				return ErrSyntax
			}
			key = []byte(k)
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return ErrSyntax
		}
		i = skipSpace(b, i+1)
		start := i
		var err error
		if i, err = skipValue(b, i, 0); err != nil {
			return err
		}
		v := b[start:i]
		switch string(key) {
		case "key":
			rec.Key, err = d.str(key, v, false)
			named = true
		case "attack":
			rec.Attack, err = d.str(key, v, true)
			named = true
		case "agent":
			rec.Agent, err = d.str(key, v, true)
			named = true
		case "defense":
			rec.Defense, err = d.str(key, v, true)
		case "channel":
			rec.Channel, err = d.str(key, v, true)
		case "target":
			rec.Target, err = d.str(key, v, true)
		case "case_id":
			rec.CaseID, err = d.str(key, v, true)
		case "reason":
			rec.Reason, err = d.str(key, v, false)
		case "error":
			rec.Error, err = d.str(key, v, false)
		case "outcome":
			rec.Outcome, err = d.outcome(key, v)
			hasOutcome = true
		case "success":
			rec.Success, err = verdictValue(key, v)
			hasSuccess = true
		case "utility":
			var ok, set bool
			if ok, set, err = boolValue(key, v); set {
				rec.SetUtility(ok)
			}
		case "repeat_index":
			rec.RepeatIndex, err = intValue(key, v)
		case "attempts":
			rec.Attempts, err = intValue(key, v)
		case "retries":
			rec.Retries, err = intValue(key, v)
		case "method_specs":
			rec.MethodSpecs, err = d.methodSpecs(v)
		case "trace_data":
			rec.ToolCallsFailed = toolCallsFailed(v)
		case "signals":
			rec.RepeatSummary = bytes.Contains(v, []byte(`"`+RepeatSummarySignal+`"`))
		case "metadata":
			// Only a benchmark name is read from it, and only when the
			// word is there at all; the text is kept for the readers of
			// adaptive searches (the last metadata is the one, as
			// encoding/json reads it).
			rec.MetadataText = v
			if bytes.Contains(v, []byte(`"benchmark"`)) || bytes.Contains(v, []byte(`"labels"`)) {
				var m struct {
					Benchmark string            `json:"benchmark"`
					Labels    map[string]string `json:"labels"`
				}
				if json.Unmarshal(v, &m) == nil {
					rec.Benchmark, rec.Labels = m.Benchmark, m.Labels
				}
			}
		}
		if err != nil {
			return err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return ErrSyntax
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return ErrSyntax
		}
		i = skipSpace(b, i+1)
	}
	if i = skipSpace(b, i); i != len(b) {
		return ErrSyntax
	}
	switch {
	case hasOutcome && rec.Outcome == "" && !hasSuccess:
		return fmt.Errorf("field \"outcome\" is empty and there is no \"success\" field: want %s", wantOutcome)
	case !hasOutcome && !hasSuccess, !named:
		return fmt.Errorf("want %s", wantResult)
	case hasSuccess && !rec.RepeatSummary:
		// A repeat-summary row is not a cell: the Python pikit gives it
		// the default outcome, whatever its runs did.
		return agree(rec.Outcome, rec.Success)
	}
	return nil
}

// outcome decodes an outcome: one of judge.Outcomes, or "" for none (a
// result judged by its success flag alone, as the Python pikit's are;
// pikit's writers write such a result's outcome as ""). null is refused:
// no writer writes it.
func (d *Decoder) outcome(key, v []byte) (judge.Outcome, error) {
	if string(v) == "null" {
		return "", fmt.Errorf("field %q: want %s; got null", key, wantOutcome)
	}
	o, err := d.str(key, v, true)
	if err != nil {
		return "", err
	}
	if out := judge.Outcome(o); out == "" || out.Valid() {
		return out, nil
	}
	return "", fmt.Errorf("field %q: want %s; got %s", key, wantOutcome, Describe([]byte(o)))
}

// verdictValue decodes a success flag: true or false, never null.
func verdictValue(key, v []byte) (bool, error) {
	ok, set, err := boolValue(key, v)
	if err == nil && !set {
		err = fmt.Errorf("field %q: want true or false, got %s", key, Describe(v))
	}
	return ok, err
}

// toolCallsFailed reports whether a trace's JSON text holds tool steps
// (kind "tool") and each of them an error (see Record.ToolCallsFailed).
// The text's structure was checked as it was skipped; only a trace with
// the key "error" in it is walked.
func toolCallsFailed(trace []byte) bool {
	if !bytes.Contains(trace, []byte(`"error"`)) {
		return false
	}
	var steps []byte
	eachField(trace, func(key, v []byte) {
		if string(key) == "steps" {
			steps = v
		}
	})
	tools, failed := 0, 0
	eachElement(steps, func(step []byte) {
		var tool, errored bool
		eachField(step, func(key, v []byte) {
			switch string(key) {
			case "kind":
				tool = string(v) == `"tool"`
			case "error":
				errored = string(v) != `""` && string(v) != "null"
			}
		})
		if tool {
			tools++
			if errored {
				failed++
			}
		}
	})
	return tools > 0 && failed == tools
}

// str decodes a JSON string value (null is ""), interned when the value
// is one that repeats across results.
func (d *Decoder) str(key, v []byte, intern bool) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		if string(v) == "null" {
			return "", nil
		}
		return "", fmt.Errorf("field %q: want a string, got %s", key, Describe(v))
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		var out string // escapes and invalid UTF-8, exactly as encoding/json
		if err := json.Unmarshal(v, &out); err != nil {
			return "", fmt.Errorf("field %q: %w", key, err)
		}
		return out, nil
	}
	if !intern {
		return string(body), nil
	}
	if out, ok := d.intern[string(body)]; ok {
		return out, nil
	}
	out := string(body)
	if d.intern == nil {
		d.intern = map[string]string{}
	}
	if len(d.intern) < maxIntern {
		d.intern[out] = out
	}
	return out, nil
}

// methodSpecs returns method_specs in the form RecordOf gives it: the
// object decoded and encoded again, so spacing and key order do not
// matter.
func (d *Decoder) methodSpecs(v []byte) (string, error) {
	if string(v) == "null" {
		return "", nil
	}
	if out, ok := d.specs[string(v)]; ok {
		return out, nil
	}
	var m map[string]Spec
	if err := json.Unmarshal(v, &m); err != nil {
		return "", fmt.Errorf("field \"method_specs\": %w", err)
	}
	out := ""
	if m != nil {
		b, err := SpecsKey(m)
		if err != nil {
			return "", fmt.Errorf("field \"method_specs\": %w", err)
		}
		out = string(b)
	}
	if d.specs == nil {
		d.specs = map[string]string{}
	}
	if len(d.specs) < maxIntern {
		d.specs[string(v)] = out
	}
	return out, nil
}

// boolValue decodes true, false or null (set false).
func boolValue(key, v []byte) (val, set bool, err error) {
	switch string(v) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	case "null":
		return false, false, nil
	}
	return false, false, fmt.Errorf("field %q: want true or false, got %s", key, Describe(v))
}

// intValue decodes an integer (null is 0).
func intValue(key, v []byte) (int, error) {
	if string(v) == "null" {
		return 0, nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return 0, fmt.Errorf("field %q: want an integer, got %s", key, Describe(v))
	}
	return n, nil
}
