package result

import (
	"encoding/json"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/target"
)

// AppendJSON appends r's result line (without its newline) to dst and
// returns the extended buffer: the JSON object pikit writes, one per JSONL
// line. Each text is written once: a text of the trace that the line
// already holds (the answer in final_text, a model step that echoes the
// user's message) is written as a reference to it (see TraceSchema);
// everything else is the bytes json.Marshal gives for the same values: the
// same fields in the same order, omitempty fields left out alike, map keys
// sorted, strings escaped the same way (<, > and & as \u003c, \u003e and
// \u0026, U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd) and floats
// formatted alike. It encodes by hand rather than by reflection, so a
// writer that reuses dst encodes a typical result without allocating.
// Metadata and option values of types it does not know are encoded by
// json.Marshal. Where json.Marshal would fail (a NaN or infinite float, a
// value it cannot encode, a map that contains itself), AppendJSON writes
// null for that value instead, as JavaScript's JSON.stringify does for
// NaN. Result's UnmarshalJSON reads the line back, references resolved.
//
// When dst lacks room for an estimate of the encoding's size, AppendJSON
// encodes the line apart and grows dst once to take it (with room for a
// newline after it), so AppendJSON(nil) allocates once.
func (r *Result) AppendJSON(dst []byte) []byte { return r.appendJSON(dst, true) }

// MarshalJSON returns r's result line (see AppendJSON).
func (r Result) MarshalJSON() ([]byte, error) { return r.appendJSON(nil, true), nil }

// appendJSON appends r's encoding, with its trace's texts written once
// (refs) or every one in full, as json.Marshal writes the same values.
//
// A dst without room for the size estimate gets the line encoded in a
// pooled buffer first and copied in: the estimate counts every text in
// full, though most of a trace's are written as references, so the line
// is often less than half of it, and a buffer made to the estimate was
// mostly room cleared for nothing. The copy allocates the line's length,
// and one byte more for the newline a writer adds.
func (r *Result) appendJSON(dst []byte, refs bool) []byte {
	hint := r.sizeHint()
	if cap(dst)-len(dst) >= hint {
		return r.encode(dst, refs)
	}
	buf := lineBuffers.Get().(*[]byte)
	line := r.encode(slices.Grow((*buf)[:0], hint), refs)
	line = append(line, '\n')
	dst = append(dst, line...)
	if cap(line) <= maxPooledLine {
		*buf = line
		lineBuffers.Put(buf)
	}
	return dst[:len(dst)-1]
}

// lineBuffers holds appendJSON's buffers; maxPooledLine bounds those kept
// for reuse.
var lineBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledLine = 1 << 20

// encode appends r's encoding to dst (see appendJSON).
func (r *Result) encode(dst []byte, refs bool) []byte {
	dst = append(dst, `{"key":`...)
	dst = appendString(dst, r.Key)
	dst = append(dst, `,"attack":`...)
	dst = appendString(dst, r.Attack)
	dst = append(dst, `,"defense":`...)
	dst = appendString(dst, r.Defense)
	dst = append(dst, `,"channel":`...)
	dst = appendString(dst, r.Channel)
	dst = append(dst, `,"agent":`...)
	dst = appendString(dst, r.Agent)
	dst = append(dst, `,"target":`...)
	dst = appendString(dst, r.Target)
	dst = append(dst, `,"task":`...)
	dst = appendString(dst, r.Task)
	dst = append(dst, `,"success":`...)
	dst = strconv.AppendBool(dst, r.Success)
	dst = append(dst, `,"confidence":`...)
	dst = appendString(dst, r.Confidence)
	dst = append(dst, `,"reason":`...)
	dst = appendString(dst, r.Reason)
	dst = append(dst, `,"signals":`...)
	dst = appendStrings(dst, r.Signals)
	dst = append(dst, `,"final_text":`...)
	dst = appendString(dst, r.FinalText)
	dst = append(dst, `,"sink_fired":`...)
	dst = strconv.AppendBool(dst, r.SinkFired)
	dst = append(dst, `,"outcome":`...)
	dst = appendString(dst, string(r.Outcome))
	dst = append(dst, `,"case_id":`...)
	dst = appendString(dst, r.CaseID)
	dst = append(dst, `,"case_description":`...)
	dst = appendString(dst, r.CaseDescription)
	dst = append(dst, `,"repeat_index":`...)
	dst = strconv.AppendInt(dst, int64(r.RepeatIndex), 10)
	dst = append(dst, `,"run_id":`...)
	dst = appendString(dst, r.RunID)
	dst = append(dst, `,"seed":`...)
	dst = strconv.AppendInt(dst, r.Seed, 10)
	dst = append(dst, `,"generation_config":`...)
	dst = appendObject(dst, r.GenerationConfig, 0)
	dst = append(dst, `,"method_specs":`...)
	dst = appendSpecs(dst, r.MethodSpecs)
	dst = append(dst, `,"evidence":`...)
	dst = appendEvidence(dst, r.Evidence, refs)
	dst = append(dst, `,"trace_data":`...)
	if refs {
		dst = appendTraceOnce(dst, r.TraceData, r.FinalText)
	} else {
		dst = appendTrace(dst, r.TraceData, nil)
	}
	dst = append(dst, `,"metadata":`...)
	dst = appendObject(dst, r.Metadata, 0)
	dst = append(dst, `,"timestamp":`...)
	dst = appendString(dst, r.Timestamp)
	dst = append(dst, `,"latency_ms":`...)
	dst = strconv.AppendInt(dst, r.LatencyMS, 10)
	dst = append(dst, `,"model_latency_ms":`...)
	dst = strconv.AppendInt(dst, r.ModelLatencyMS, 10)
	dst = append(dst, `,"attempts":`...)
	dst = strconv.AppendInt(dst, int64(r.Attempts), 10)
	dst = append(dst, `,"retries":`...)
	dst = strconv.AppendInt(dst, int64(r.Retries), 10)
	dst = append(dst, `,"usage":`...)
	dst = appendUsage(dst, r.Usage)
	dst = append(dst, `,"model_complied":`...)
	dst = strconv.AppendBool(dst, r.ModelComplied)
	dst = append(dst, `,"runtime_blocked":`...)
	dst = strconv.AppendBool(dst, r.RuntimeBlocked)
	dst = append(dst, `,"success_count":`...)
	dst = strconv.AppendInt(dst, int64(r.SuccessCount), 10)
	dst = append(dst, `,"total_runs":`...)
	dst = strconv.AppendInt(dst, int64(r.TotalRuns), 10)
	if r.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, r.Error)
	}
	if r.Utility != nil {
		dst = append(dst, `,"utility":`...)
		dst = strconv.AppendBool(dst, *r.Utility)
	}
	if j := r.JudgedAgainst; j != nil {
		dst = append(dst, `,"judged_against":`...)
		dst = appendJudgedAgainst(dst, j, r.Task, refs)
	}
	return append(dst, '}')
}

// appendJudgedAgainst appends what a verdict was judged against; with
// once, its task is left out when it is the result's own (a reader takes
// the result's then: see UnmarshalJSON).
func appendJudgedAgainst(dst []byte, j *JudgedAgainst, task string, once bool) []byte {
	if once && j.Task == task {
		dst = append(dst, '{')
		if j.Payload != "" {
			dst = append(dst, `"payload":`...)
			dst = appendString(dst, j.Payload)
			dst = append(dst, ',')
		}
		dst = append(dst, `"canary":`...)
	} else {
		dst = append(dst, `{"task":`...)
		dst = appendString(dst, j.Task)
		dst = appendOptString(dst, `,"payload":`, j.Payload)
		dst = append(dst, `,"canary":`...)
	}
	dst = appendString(dst, j.Canary)
	dst = appendOptString(dst, `,"canary_regex":`, j.CanaryRegex)
	if j.CanaryFuzzy != 0 {
		dst = append(dst, `,"canary_fuzzy":`...)
		dst = strconv.AppendInt(dst, int64(j.CanaryFuzzy), 10)
	}
	dst = appendOptString(dst, `,"judge_criteria":`, j.Criteria)
	if len(j.SinkArgs) > 0 {
		dst = append(dst, `,"sink_args":`...)
		dst = appendStringMap(dst, j.SinkArgs)
	}
	dst = append(dst, `,"require_sink":`...)
	dst = strconv.AppendBool(dst, j.RequireSink)
	return append(dst, '}')
}

// sizeHint estimates the length of r's encoding: its texts, an allowance
// for names and punctuation, and an eighth more for escapes.
func (r *Result) sizeHint() int {
	n := 512 + len(r.Key) + len(r.Attack) + len(r.Defense) + len(r.Channel) + len(r.Agent) +
		len(r.Target) + len(r.Task) + len(r.Confidence) + len(r.Reason) + len(r.FinalText) +
		len(r.Outcome) + len(r.CaseID) + len(r.CaseDescription) + len(r.RunID) + len(r.Timestamp) + len(r.Error)
	if j := r.JudgedAgainst; j != nil {
		n += 112 + len(j.Task) + len(j.Payload) + len(j.Canary) + len(j.CanaryRegex) + len(j.Criteria)
		for k, v := range j.SinkArgs {
			n += 6 + len(k) + len(v)
		}
	}
	for _, s := range r.Signals {
		n += 3 + len(s)
	}
	n += 32 * (len(r.GenerationConfig) + len(r.Metadata) + len(r.MethodSpecs))
	for _, ev := range r.Evidence {
		n += 48 + len(ev.Signal) + len(ev.Detail)
	}
	if tr := r.TraceData; tr != nil {
		n += 144 + len(tr.Agent) + len(tr.System) + len(tr.FinalText)
		for i := range tr.Steps {
			s := &tr.Steps[i]
			n += 40 + len(s.Kind) + len(s.Text) + len(s.Tool) + len(s.CallID) + len(s.Arguments) + len(s.Result) + len(s.Error)
			for _, c := range s.ToolCalls {
				n += 40 + len(c.ID) + len(c.Name) + len(c.Arguments)
			}
		}
		for _, c := range tr.SinkCalls {
			n += 48 + len(c.Tool) + 48*len(c.Arguments)
		}
		if b := tr.Blocked; b != nil {
			n += 96 + len(b.Reason)
		}
	}
	return n + n/8
}

// appendStringMap appends a map of strings as a JSON object, keys sorted.
func appendStringMap(dst []byte, m map[string]string) []byte {
	var arr [8]string
	dst = append(dst, '{')
	for i, k := range sortedKeysInto(arr[:0], m) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendString(dst, m[k])
	}
	return append(dst, '}')
}

func appendSpecs(dst []byte, m map[string]Spec) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	var arr [8]string
	keys := sortedKeysInto(arr[:0], m)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		s := m[k]
		dst = append(dst, `:{"name":`...)
		dst = appendString(dst, s.Name)
		dst = append(dst, `,"kwargs":`...)
		dst = appendObject(dst, s.Kwargs, 1)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendEvidence appends evidence items; with once, an item's detail is
// left out when its details (the Python pikit's key) holds the same text
// (a reader takes it from there: see UnmarshalJSON), and written empty
// when it is empty and details is not.
func appendEvidence(dst []byte, evs []judge.Evidence, once bool) []byte {
	if evs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, ev := range evs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"signal":`...)
		dst = appendString(dst, ev.Signal)
		dst = append(dst, `,"step":`...)
		dst = strconv.AppendInt(dst, int64(ev.Step), 10)
		switch {
		case once && ev.Detail == "" && ev.Details != "":
			dst = append(dst, `,"detail":""`...)
		case once && ev.Detail == ev.Details:
		case ev.Detail != "":
			dst = append(dst, `,"detail":`...)
			dst = appendString(dst, ev.Detail)
		}
		if ev.Type != "" {
			dst = append(dst, `,"type":`...)
			dst = appendString(dst, ev.Type)
		}
		dst = append(dst, `,"trace_step":`...)
		dst = strconv.AppendInt(dst, int64(ev.TraceStep), 10)
		if ev.Tool != "" {
			dst = append(dst, `,"tool":`...)
			dst = appendString(dst, ev.Tool)
		}
		if len(ev.Args) > 0 {
			dst = append(dst, `,"args":`...)
			dst = appendObject(dst, ev.Args, 1)
		}
		if ev.Value != "" {
			dst = append(dst, `,"value":`...)
			dst = appendString(dst, ev.Value)
		}
		if len(ev.Expected) > 0 {
			dst = append(dst, `,"expected":`...)
			dst = appendStringMap(dst, ev.Expected)
		}
		if ev.Details != "" {
			dst = append(dst, `,"details":`...)
			dst = appendString(dst, ev.Details)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendTrace appends a trace. With texts (see appendTraceOnce) it writes
// the trace schema's version and each text the line already holds as a
// reference to it; without, every text in full.
func appendTrace(dst []byte, tr *agent.Trace, texts *textRefs) []byte {
	if tr == nil {
		return append(dst, "null"...)
	}
	if texts != nil {
		dst = append(dst, `{"schema_version":"`+TraceSchema+`","agent":`...)
	} else {
		dst = append(dst, `{"agent":`...)
	}
	dst = appendString(dst, tr.Agent)
	dst = append(dst, `,"system":`...)
	dst = appendString(dst, tr.System)
	dst = append(dst, `,"steps":`...)
	if tr.Steps == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range tr.Steps {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStep(dst, &tr.Steps[i], i, texts)
		}
		dst = append(dst, ']')
	}
	if texts != nil && tr.FinalText != "" {
		dst = texts.appendText(dst, `,"final_text`, tr.FinalText, len(tr.Steps))
	} else {
		dst = append(dst, `,"final_text":`...)
		dst = appendString(dst, tr.FinalText)
	}
	if len(tr.SinkCalls) > 0 {
		dst = append(dst, `,"sink_calls":[`...)
		for i, c := range tr.SinkCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"step":`...)
			dst = strconv.AppendInt(dst, int64(c.Step), 10)
			dst = append(dst, `,"tool":`...)
			dst = appendString(dst, c.Tool)
			dst = append(dst, `,"arguments":`...)
			dst = appendObject(dst, c.Arguments, 1)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"taint_delivered":`...)
	dst = strconv.AppendBool(dst, tr.TaintDelivered)
	if b := tr.Blocked; b != nil {
		dst = append(dst, `,"blocked":{"point":`...)
		dst = appendString(dst, b.Point)
		dst = append(dst, `,"detector":`...)
		dst = appendString(dst, b.Detector)
		dst = append(dst, `,"reason":`...)
		dst = appendString(dst, b.Reason)
		dst = append(dst, `,"score":`...)
		dst = appendFloat(dst, b.Score, 64)
		dst = append(dst, `,"step":`...)
		dst = strconv.AppendInt(dst, int64(b.Step), 10)
		dst = append(dst, '}')
	}
	if tr.MaxStepsHit {
		dst = append(dst, `,"max_steps_hit":true`...)
	}
	if tr.Reruns > 0 {
		dst = append(dst, `,"reruns":`...)
		dst = strconv.AppendInt(dst, int64(tr.Reruns), 10)
	}
	dst = append(dst, `,"model_calls":`...)
	dst = strconv.AppendInt(dst, int64(tr.ModelCalls), 10)
	dst = append(dst, `,"usage":`...)
	dst = appendUsage(dst, tr.Usage)
	if len(tr.Rounds) > 0 {
		// Only adaptive cells have rounds: encoding/json is fast enough.
		dst = append(dst, `,"rounds":`...)
		dst = appendMarshal(dst, tr.Rounds)
	}
	return append(dst, '}')
}

// appendStep appends the step at position pos of its trace.
func appendStep(dst []byte, s *agent.Step, pos int, texts *textRefs) []byte {
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, int64(s.Index), 10)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, s.Kind)
	if texts != nil && s.Text != "" {
		dst = texts.appendText(dst, `,"text`, s.Text, pos)
	} else {
		dst = appendOptString(dst, `,"text":`, s.Text)
	}
	if len(s.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i, c := range s.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendToolCall(dst, c)
		}
		dst = append(dst, ']')
	}
	dst = appendOptString(dst, `,"tool":`, s.Tool)
	dst = appendOptString(dst, `,"call_id":`, s.CallID)
	dst = appendOptString(dst, `,"arguments":`, s.Arguments)
	if texts != nil && s.Result != "" {
		dst = texts.appendText(dst, `,"result`, s.Result, pos)
	} else {
		dst = appendOptString(dst, `,"result":`, s.Result)
	}
	if s.Tainted {
		dst = append(dst, `,"tainted":true`...)
	}
	if s.Sink {
		dst = append(dst, `,"sink":true`...)
	}
	if s.Blocked {
		dst = append(dst, `,"blocked":true`...)
	}
	dst = appendOptString(dst, `,"error":`, s.Error)
	if s.Prefetched {
		dst = append(dst, `,"prefetched":true`...)
	}
	return append(dst, '}')
}

func appendToolCall(dst []byte, c target.ToolCall) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, c.ID)
	dst = append(dst, `,"name":`...)
	dst = appendString(dst, c.Name)
	dst = append(dst, `,"arguments":`...)
	dst = appendString(dst, c.Arguments)
	return append(dst, '}')
}

func appendUsage(dst []byte, u target.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.PromptTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CompletionTokens), 10)
	return append(dst, '}')
}

// appendOptString appends an omitempty string field: its name (with the
// leading comma) and value, or nothing when the value is "".
func appendOptString(dst []byte, name, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, name...)
	return appendString(dst, s)
}

func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// maxDepth is how deeply appendValue nests maps and slices itself; deeper
// values go to json.Marshal, which finds a value that contains itself.
const maxDepth = 100

// appendObject appends a map with its keys sorted, as json.Marshal does;
// nil is null. depth counts the maps and slices it is nested in.
func appendObject(dst []byte, m map[string]any, depth int) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	if depth > maxDepth {
		return appendMarshal(dst, m)
	}
	var arr [16]string // the keys of most maps, without allocating
	keys := sortedKeysInto(arr[:0], m)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendValue(dst, m[k], depth+1)
	}
	return append(dst, '}')
}

// appendValue appends a value of a map[string]any or []any: the types a
// result's maps and decoded JSON hold are encoded here, any other by
// json.Marshal. Only the exact types match, so a named type (with its own
// MarshalJSON, perhaps) goes to json.Marshal too.
func appendValue(dst []byte, v any, depth int) []byte {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...)
	case string:
		return appendString(dst, v)
	case bool:
		return strconv.AppendBool(dst, v)
	case float64:
		return appendFloat(dst, v, 64)
	case float32:
		return appendFloat(dst, float64(v), 32)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case int8:
		return strconv.AppendInt(dst, int64(v), 10)
	case int16:
		return strconv.AppendInt(dst, int64(v), 10)
	case int32:
		return strconv.AppendInt(dst, int64(v), 10)
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10)
	case uint64:
		return strconv.AppendUint(dst, v, 10)
	case []string:
		return appendStrings(dst, v)
	case map[string]any:
		return appendObject(dst, v, depth)
	case []any:
		if v == nil {
			return append(dst, "null"...)
		}
		if depth > maxDepth {
			return appendMarshal(dst, v)
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, e, depth+1)
		}
		return append(dst, ']')
	}
	return appendMarshal(dst, v)
}

// appendMarshal appends what json.Marshal makes of v, or null when it
// fails.
func appendMarshal(dst []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

// appendFloat formats f as encoding/json does: like ES6, %f in the usual
// range and an exponent without padding beyond it. NaN and infinities,
// which JSON cannot hold, are null.
func appendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// e-09 becomes e-9.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// htmlSafe marks, for each ASCII byte, whether encoding/json writes it as
// it is (with HTML escaping on, as json.Marshal has it): not a control
// byte, ", \\, <, > or &.
const htmlSafe = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x01\x01\x00\x01\x01\x01\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x00\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01"

// appendString appends s as a JSON string, escaped as json.Marshal escapes
// it. Text is read eight bytes at a time up to the next byte that needs an
// escape or is not ASCII (see skipPlain): most of any text is passed over
// that way. The rest goes a byte or a rune at a time.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = skipPlain(s, i); i == len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if htmlSafe[b] != 0 {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				// Other control bytes, and <, > and &.
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// skipPlain returns the index of the first byte of s from i on that is
// not ASCII that JSON strings hold as they are (see htmlSafe): outside
// ASCII, below a space, or one of ", \, <, > and &. It reads eight bytes
// at a time, and stops short, at the first of them, when fewer than eight
// are left.
func skipPlain(s string, i int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		// (y-lo)&^y sets the top bit of the bytes of y that are 0, exactly
		// up to the first one (a borrow may set more above it); likewise
		// (x-0x20*lo)&^x for bytes below a space. The lowest bit set is
		// the first special byte.
		angle := x | 0x02*lo ^ 0x3e*lo // 0 for < and > (0x3c, 0x3e)
		quote := x | 0x04*lo ^ 0x26*lo // 0 for " and & (0x22, 0x26)
		slash := x ^ 0x5c*lo           // 0 for a backslash
		m := (x | (x-0x20*lo)&^x | (angle-lo)&^angle | (quote-lo)&^quote | (slash-lo)&^slash) & hi
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	return i
}

// sortedKeysInto appends m's keys to keys, sorted as encoding/json orders
// them; given a stack array's slice, a small map's keys cost no allocation.
func sortedKeysInto[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
