package result

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/agent"
)

// TraceSchema names the encoding of a result's trace_data, written as its
// schema_version. In it each text is written once: a text of the trace (its
// final_text, a step's text or result) that the line already holds, whole
// or after a prefix, is written as a reference instead, NAME_ref, a JSON
// Pointer into the same result, with NAME_prefix, the text before it, when
// there is one:
//
//	"final_text_ref": "/final_text"
//	"text_ref": "/trace_data/steps/0/text", "text_prefix": "[mock] "
//
// A reference points to the result's final_text or to the text or result
// of an earlier step. A trace without schema_version (files written before
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
}

// appendTraceOnce appends a trace in TraceSchema.
func appendTraceOnce(dst []byte, tr *agent.Trace, final string) []byte {
	if tr == nil {
		return appendTrace(dst, nil, nil)
	}
	return appendTrace(dst, tr, &textRefs{final: final, steps: tr.Steps})
}

// appendText appends the field name (`,"text`, without its closing quote)
// with the text s of the step at position pos (len(steps) for the trace's
// own final_text): as a reference to the longest text the line already
// holds that s ends with, when one is at least minRefText long and the
// prefix before it is no longer than it; else in full.
func (t *textRefs) appendText(dst []byte, name, s string, pos int) []byte {
	best, bestLen := "", 0
	var bestStep int
	consider := func(src string, ref string, step int) {
		if len(src) > bestLen && len(src) >= minRefText && len(s) <= 2*len(src) && strings.HasSuffix(s, src) {
			best, bestLen, bestStep = ref, len(src), step
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
	TextPrefix   string  `json:"text_prefix"`
	ResultRef    *string `json:"result_ref"`
	ResultPrefix string  `json:"result_prefix"`
}

// wireTrace is a trace as TraceSchema writes it.
type wireTrace struct {
	agent.Trace
	SchemaVersion string     `json:"schema_version"`
	Steps         []wireStep `json:"steps"`
	FinalTextRef  *string    `json:"final_text_ref"`
	FinalPrefix   string     `json:"final_text_prefix"`
}

// wireResult is a result line: Result with its trace as written.
type wireResult struct {
	*plain
	TraceData *wireTrace `json:"trace_data"`
}

// UnmarshalJSON reads a result line, in TraceSchema or with every text in
// full, resolving the trace's references (see TraceSchema). A reference
// that points nowhere (or to a later step) is an error naming it.
func (r *Result) UnmarshalJSON(b []byte) error {
	w := wireResult{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
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

// resolve returns the trace with its references replaced by the texts
// they point to.
func (w *wireTrace) resolve(final string) (*agent.Trace, error) {
	tr := w.Trace
	if w.Steps != nil {
		tr.Steps = make([]agent.Step, len(w.Steps))
	}
	budget := maxExpanded
	text := func(field string, pos int, ref *string, prefix, literal string) (string, error) {
		if ref == nil {
			if prefix != "" {
				return "", fmt.Errorf("trace_data%s_prefix: a prefix without %s_ref", field, field[strings.LastIndexByte(field, '.')+1:])
			}
			return literal, nil
		}
		src, ok := lookup(*ref, final, tr.Steps, pos)
		if !ok {
			return "", fmt.Errorf("trace_data%s_ref: want /final_text or /trace_data/steps/N/text or …/result of an earlier step, got %q", field, *ref)
		}
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
		if s.Text, err = text(at+"text", i, ws.TextRef, ws.TextPrefix, s.Text); err != nil {
			return nil, err
		}
		if s.Result, err = text(at+"result", i, ws.ResultRef, ws.ResultPrefix, s.Result); err != nil {
			return nil, err
		}
		tr.Steps[i] = s
	}
	if tr.FinalText, err = text(".final_text", len(tr.Steps), w.FinalTextRef, w.FinalPrefix, tr.FinalText); err != nil {
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
