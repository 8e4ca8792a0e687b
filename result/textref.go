package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
)

// TraceSchema names the encoding of a result's trace_data, written as its
// schema_version. In it each text is written once: a text of the trace (its
// final_text, a step's text or result) that the line already holds is
// written as a reference instead: NAME_ref, a JSON Pointer into the same
// result, with NAME_from, the byte offset in that text where this one's
// share of it starts (0 when absent), and NAME_prefix, the text before
// that share (empty when absent). The text is the prefix followed by the
// referenced text from the offset on:
//
//	"final_text_ref": "/final_text"
//	"text_ref": "/trace_data/steps/0/text", "text_prefix": "[mock] "
//	"text_ref": "/final_text", "text_from": 7
//
// A reference points to the result's final_text or to the text or result
// of an earlier step; the offset falls on a UTF-8 character boundary
// within it. A trace without schema_version (files written before
// pikit wrote it) holds every text in full; Result's UnmarshalJSON reads
// both, so readers see the same texts either way.
const TraceSchema = "pikit.trace.v2"

// minRefText is the shortest text written as a reference: below it the
// reference saves little.
const minRefText = 64

// textRefs finds, for a trace's texts, one the line already holds.
type textRefs struct {
	final string // the result's final_text
	steps []agent.Step
	// budget is how many more bytes the search may compare: texts that
	// share long ends with many others (a hostile agent's trace) would
	// otherwise cost the square of the trace's size. Past it, texts are
	// written in full.
	budget int
}

// refBudget is a trace's comparison budget.
const refBudget = 16 << 20

// appendTraceOnce appends a trace in TraceSchema.
func appendTraceOnce(dst []byte, tr *agent.Trace, final string) []byte {
	if tr == nil {
		return appendTrace(dst, nil, nil)
	}
	return appendTrace(dst, tr, &textRefs{final: final, steps: tr.Steps, budget: refBudget})
}

// appendText appends the field name (`,"text`, without its closing quote)
// with the text s of the step at position pos (len(steps) for the trace's
// own final_text): as a reference to a text the line already holds when s
// ends with that text (after a prefix no longer than it) or is the end of
// it, and the shared part is at least minRefText long (the longest such
// share wins); else in full.
func (t *textRefs) appendText(dst []byte, name, s string, pos int) []byte {
	best, bestLen, bestFrom := "", 0, 0
	var bestStep int
	// Only valid UTF-8 is cut and joined: the encoding writes an invalid
	// byte as U+FFFD, so offsets into invalid text would not hold.
	valid := -1
	validS := func() bool {
		if valid < 0 {
			valid = 0
			if utf8.ValidString(s) {
				valid = 1
			}
		}
		return valid == 1
	}
	consider := func(src string, ref string, step int) {
		switch {
		case len(src) <= bestLen || len(src) < minRefText && len(s) < minRefText || t.budget < min(len(s), len(src)):
			return
		}
		t.budget -= min(len(s), len(src))
		switch {
		case len(s) <= 2*len(src) && strings.HasSuffix(s, src):
			if len(src) >= minRefText && (len(s) == len(src) || validS() && utf8.ValidString(src)) {
				best, bestLen, bestFrom, bestStep = ref, len(src), 0, step
			}
		case len(s) > bestLen && len(s) >= minRefText && len(s) < len(src) && strings.HasSuffix(src, s) && validS() && utf8.ValidString(src):
			best, bestLen, bestFrom, bestStep = ref, len(s), len(src)-len(s), step
		}
	}
	consider(t.final, "/final_text", -1)
	for j := 0; j < pos && j < len(t.steps) && bestLen < len(s); j++ {
		consider(t.steps[j].Text, "text", j)
		consider(t.steps[j].Result, "result", j)
	}
	if bestLen == 0 {
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		return appendString(dst, s)
	}
	dst = append(dst, name...)
	dst = append(dst, `_ref":"`...)
	if bestStep < 0 {
		dst = append(dst, best...)
	} else {
		dst = append(dst, "/trace_data/steps/"...)
		dst = strconv.AppendInt(dst, int64(bestStep), 10)
		dst = append(dst, '/')
		dst = append(dst, best...)
	}
	dst = append(dst, '"')
	if bestFrom > 0 {
		dst = append(dst, name...)
		dst = append(dst, `_from":`...)
		dst = strconv.AppendInt(dst, int64(bestFrom), 10)
	}
	if prefix := s[:len(s)-bestLen]; prefix != "" {
		dst = append(dst, name...)
		dst = append(dst, `_prefix":`...)
		dst = appendString(dst, prefix)
	}
	return dst
}

// maxExpanded bounds the texts one result's references may expand to, so
// a hostile line of many references to long texts cannot take the
// reader's memory.
const maxExpanded = 256 << 20

// plain is Result without its methods: encoding/json's own view of it.
type plain Result

// wireStep is a step as TraceSchema writes it.
type wireStep struct {
	agent.Step
	TextRef      *string `json:"text_ref"`
	TextFrom     int     `json:"text_from"`
	TextPrefix   string  `json:"text_prefix"`
	ResultRef    *string `json:"result_ref"`
	ResultFrom   int     `json:"result_from"`
	ResultPrefix string  `json:"result_prefix"`
}

// wireTrace is a trace as TraceSchema writes it.
type wireTrace struct {
	agent.Trace
	SchemaVersion string     `json:"schema_version"`
	Steps         []wireStep `json:"steps"`
	FinalTextRef  *string    `json:"final_text_ref"`
	FinalFrom     int        `json:"final_text_from"`
	FinalPrefix   string     `json:"final_text_prefix"`
}

// wireEvidence is an evidence item as a line writes it: its detail may be
// left out for its details (see appendEvidence).
type wireEvidence struct {
	judge.Evidence
	Detail *string `json:"detail"`
}

// wireJudged is judged_against as a line writes it: its task may be left
// out for the result's (see appendJudgedAgainst).
type wireJudged struct {
	JudgedAgainst
	Task *string `json:"task"`
}

// wireResult is a result line: Result with its trace, evidence and
// judged_against as written.
type wireResult struct {
	*plain
	TraceData     *wireTrace     `json:"trace_data"`
	Evidence      []wireEvidence `json:"evidence"`
	JudgedAgainst *wireJudged    `json:"judged_against"`
}

// UnmarshalJSON reads a result line, in TraceSchema or with every text in
// full, resolving the trace's references (see TraceSchema), an evidence
// item's detail left out for its details, and judged_against's task left
// out for the result's. A reference that points nowhere (or to a later
// step) is an error naming it.
func (r *Result) UnmarshalJSON(b []byte) error {
	w := wireResult{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	r.Evidence = nil
	if w.Evidence != nil {
		r.Evidence = make([]judge.Evidence, len(w.Evidence))
		for i, e := range w.Evidence {
			r.Evidence[i] = e.Evidence
			if e.Detail != nil {
				r.Evidence[i].Detail = *e.Detail
			} else {
				r.Evidence[i].Detail = e.Details
			}
		}
	}
	r.JudgedAgainst = nil
	if j := w.JudgedAgainst; j != nil {
		ja := j.JudgedAgainst
		if j.Task != nil {
			ja.Task = *j.Task
		} else {
			ja.Task = r.Task
		}
		r.JudgedAgainst = &ja
	}
	if w.TraceData == nil {
		r.TraceData = nil
		return nil
	}
	tr, err := w.TraceData.resolve(r.FinalText)
	if err != nil {
		return err
	}
	r.TraceData = tr
	return nil
}

// DecodeTrace reads a trace_data object as a result line holds it, in
// TraceSchema or with every text in full, its references resolved against
// final (the result's final_text) and its own steps. With strict, a key
// that is neither a trace's nor a reference's is an error, as
// encoding/json's DisallowUnknownFields makes it.
func DecodeTrace(b []byte, final string, strict bool) (*agent.Trace, error) {
	var w wireTrace
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	if w.SchemaVersion != "" && w.SchemaVersion != TraceSchema {
		return nil, fmt.Errorf("trace_data: schema_version %q: want %s (or none, every text in full)", w.SchemaVersion, TraceSchema)
	}
	return w.resolve(final)
}

// resolve returns the trace with its references replaced by the texts
// they point to.
func (w *wireTrace) resolve(final string) (*agent.Trace, error) {
	tr := w.Trace
	if w.Steps != nil {
		tr.Steps = make([]agent.Step, len(w.Steps))
	}
	budget := maxExpanded
	text := func(field string, pos int, ref *string, from int, prefix, literal string) (string, error) {
		if ref == nil {
			if prefix != "" || from != 0 {
				return "", fmt.Errorf("trace_data%s: a prefix or offset without a reference (%s_ref)", field, field[strings.LastIndexByte(field, '.')+1:])
			}
			return literal, nil
		}
		src, ok := lookup(*ref, final, tr.Steps, pos)
		if !ok {
			return "", fmt.Errorf("trace_data%s_ref: want /final_text or /trace_data/steps/N/text or …/result of an earlier step, got %q", field, *ref)
		}
		if from < 0 || from > len(src) || !utf8.RuneStart(src[from%max(len(src), 1)]) && from < len(src) {
			return "", fmt.Errorf("trace_data%s_from: %d is no character boundary of the %d bytes %s holds", field, from, len(src), *ref)
		}
		src = src[from:]
		if prefix == "" {
			return src, nil
		}
		if budget -= len(prefix) + len(src); budget < 0 {
			return "", fmt.Errorf("trace_data%s_ref: the trace's references expand to more than %d MiB", field, maxExpanded>>20)
		}
		return prefix + src, nil
	}
	var err error
	for i := range w.Steps {
		ws := &w.Steps[i]
		s := ws.Step
		at := ".steps[" + strconv.Itoa(i) + "]."
		if s.Text, err = text(at+"text", i, ws.TextRef, ws.TextFrom, ws.TextPrefix, s.Text); err != nil {
			return nil, err
		}
		if s.Result, err = text(at+"result", i, ws.ResultRef, ws.ResultFrom, ws.ResultPrefix, s.Result); err != nil {
			return nil, err
		}
		tr.Steps[i] = s
	}
	if tr.FinalText, err = text(".final_text", len(tr.Steps), w.FinalTextRef, w.FinalFrom, w.FinalPrefix, tr.FinalText); err != nil {
		return nil, err
	}
	return &tr, nil
}

// lookup returns the text a reference points to: the result's final_text,
// or the text or result of a step before pos.
func lookup(ref, final string, steps []agent.Step, pos int) (string, bool) {
	if ref == "/final_text" {
		return final, true
	}
	rest, ok := strings.CutPrefix(ref, "/trace_data/steps/")
	if !ok {
		return "", false
	}
	num, field, ok := strings.Cut(rest, "/")
	j, err := strconv.Atoi(num)
	if !ok || err != nil || j < 0 || j >= pos || j >= len(steps) || strconv.Itoa(j) != num {
		return "", false
	}
	switch field {
	case "text":
		return steps[j].Text, true
	case "result":
		return steps[j].Result, true
	}
	return "", false
}
