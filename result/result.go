package result

import (
	"encoding/json"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/target"
)

// Spec is a method with options: an entry of attack_specs, defense_specs or
// channel_specs ({name = "...", kwargs = {...}}).
//
// A result's method_specs give kwargs always ({} when there are none), as
// the Python pikit's do.
type Spec struct {
	Name   string         `json:"name" toml:"name"`
	Kwargs map[string]any `json:"kwargs" toml:"kwargs"`
}

// SchemaVersion names the result schema, in every result's metadata
// (schema_version): the Python pikit's name for the schema pikit's
// results extend. The trace's own encoding is versioned apart (see
// TraceSchema).
const SchemaVersion = "pikit.experiment-result.v1"

// Result is the outcome of one cell. Field names follow the Python pikit's
// result schema, plus key, latency_ms, model_latency_ms, attempts,
// retries, usage, error and judged_against.
type Result struct {
	Key              string           `json:"key"`
	Attack           string           `json:"attack"`
	Defense          string           `json:"defense"`
	Channel          string           `json:"channel"`
	Agent            string           `json:"agent"`
	Target           string           `json:"target"`
	Task             string           `json:"task"`
	Success          bool             `json:"success"`
	Confidence       string           `json:"confidence"`
	Reason           string           `json:"reason"`
	Signals          []string         `json:"signals"`
	FinalText        string           `json:"final_text"`
	SinkFired        bool             `json:"sink_fired"`
	Outcome          judge.Outcome    `json:"outcome"`
	CaseID           string           `json:"case_id"`
	CaseDescription  string           `json:"case_description"`
	RepeatIndex      int              `json:"repeat_index"`
	RunID            string           `json:"run_id"`
	Seed             int64            `json:"seed"`
	GenerationConfig map[string]any   `json:"generation_config"`
	MethodSpecs      map[string]Spec  `json:"method_specs"`
	Evidence         []judge.Evidence `json:"evidence"`
	TraceData        *agent.Trace     `json:"trace_data"`
	Metadata         map[string]any   `json:"metadata"`
	Timestamp        string           `json:"timestamp"`
	// LatencyMS is the cell's wall-clock time: crafting, every model
	// request with its retries and the waits between them, and judging.
	// ModelLatencyMS is the time of the model requests that got an answer
	// alone: an attempt abandoned (timed out, failed) and the back-off
	// before a retry are not in it.
	LatencyMS      int64 `json:"latency_ms"`
	ModelLatencyMS int64 `json:"model_latency_ms"`
	// Attempts counts the model requests the cell sent (the target, an
	// LLM judge, an attacker model), Retries those of them that repeated
	// a failed attempt (a timeout, a 429, a 5xx). Answers the response
	// cache gave are not requests.
	Attempts int          `json:"attempts"`
	Retries  int          `json:"retries"`
	Usage    target.Usage `json:"usage"`
	// The Python pikit's verdict fields, derived from Outcome:
	// ModelComplied (the model did, at least in part, what the payload
	// asked: full_success, sink_attempted, sink_args_mismatch,
	// partial_compliance), RuntimeBlocked (a detector withheld the
	// payload: policy_blocked), and SuccessCount of TotalRuns (a result is
	// one run: 1 or 0 of 1).
	ModelComplied  bool   `json:"model_complied"`
	RuntimeBlocked bool   `json:"runtime_blocked"`
	SuccessCount   int    `json:"success_count"`
	TotalRuns      int    `json:"total_runs"`
	Error          string `json:"error,omitempty"`
	// Utility says whether the answer still did the user's task (it holds
	// the config's expected text); absent when the config expects nothing.
	Utility *bool `json:"utility,omitempty"`
	// JudgedAgainst is what the verdict was decided against, so a results
	// file can be scored again without its config or dataset; absent in
	// files written before pikit recorded it.
	JudgedAgainst *JudgedAgainst `json:"judged_against,omitempty"`
}

// JudgedAgainst is the task a cell's verdict was decided against: the
// injected task, the payload as the attack worded it (the winning or
// closest candidate of an adaptive search), the canary a compliant answer
// carries, the arguments a fired sink must carry, and whether success
// needs a sink to fire.
type JudgedAgainst struct {
	Task        string            `json:"task"`
	Payload     string            `json:"payload,omitempty"`
	Canary      string            `json:"canary"`
	CanaryRegex string            `json:"canary_regex,omitempty"`
	CanaryFuzzy int               `json:"canary_fuzzy,omitempty"`
	Criteria    string            `json:"judge_criteria,omitempty"`
	SinkArgs    map[string]string `json:"sink_args,omitempty"`
	RequireSink bool              `json:"require_sink"`
}

// JudgeTask returns what a judge is given to decide the verdict again.
func (j *JudgedAgainst) JudgeTask() judge.Task {
	if j == nil {
		return judge.Task{}
	}
	return judge.Task{Text: j.Task, Payload: j.Payload, Canary: j.Canary, CanaryRegex: j.CanaryRegex, CanaryFuzzy: j.CanaryFuzzy, Criteria: j.Criteria, SinkArgs: j.SinkArgs, RequireSink: j.RequireSink}
}

// Against records the task a judge decided a verdict against.
func Against(t judge.Task) *JudgedAgainst {
	return &JudgedAgainst{Task: t.Text, Payload: t.Payload, Canary: t.Canary, CanaryRegex: t.CanaryRegex, CanaryFuzzy: t.CanaryFuzzy, Criteria: t.Criteria, SinkArgs: t.SinkArgs, RequireSink: t.RequireSink}
}

// SetVerdictFields fills the fields the Python pikit derives from a
// result's outcome: model_complied, runtime_blocked, success_count and
// total_runs.
func (r *Result) SetVerdictFields() {
	switch r.Outcome {
	case judge.FullSuccess, judge.SinkAttempted, judge.SinkArgsMismatch, judge.PartialCompliance:
		r.ModelComplied = true
	default:
		r.ModelComplied = false
	}
	r.RuntimeBlocked = r.Outcome == judge.PolicyBlocked
	r.SuccessCount, r.TotalRuns = 0, 1
	if r.Success {
		r.SuccessCount = 1
	}
}

// keySpec is a Spec as keys and comparisons encode it: kwargs left out
// when there are none, as they always have been, so that cell keys (and
// resumes) stay the same and results pair across files whether they
// wrote empty kwargs or none.
type keySpec struct {
	Name   string         `json:"name"`
	Kwargs map[string]any `json:"kwargs,omitempty"`
}

// SpecKey returns a method spec as compact JSON with keys sorted and empty
// kwargs left out: how cell keys name what a cell tried.
func SpecKey(s Spec) ([]byte, error) { return json.Marshal(keySpec{s.Name, s.Kwargs}) }

// SpecsKey returns method specs as compact JSON with keys sorted and
// empty kwargs left out: what a cell tried, for pairing results across
// files and runs.
func SpecsKey(m map[string]Spec) ([]byte, error) {
	n := make(map[string]keySpec, len(m))
	for k, v := range m {
		n[k] = keySpec{v.Name, v.Kwargs}
	}
	return json.Marshal(n)
}
