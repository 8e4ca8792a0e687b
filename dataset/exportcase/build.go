package exportcase

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// Building a case: the fixed attack with the winner's payload, under the
// result's defense, channel, agent, target and generation config, with
// what the result does not record copied from --from.

// What export-case reads: results files are written by attackers (the
// payloads, and a hostile file passed around), so one result's winning
// texts are bounded, and so is the --from file.
const (
	maxWinningBytes = 8 << 20  // the winning texts of one result: injection, turns, parts
	MaxSourceBytes  = 32 << 20 // the --from file
)

// Builder makes the cases of one results file.
type Builder struct {
	Results string  // the results file's name ("-" for standard input), in references and the header
	DocName string  // the name the cases are checked under, in errors
	Source  *Source // --from, nil for none
	// Warn is told what a case could not copy or replay, by the result's
	// line; nil drops the warnings.
	Warn func(line int, msg string)
	ids  map[string]bool // case ids taken
}

func (x *Builder) warn(line int, format string, a ...any) {
	if x.Warn != nil {
		x.Warn(line, fmt.Sprintf(format, a...))
	}
}

// Keep takes a case into the file: its id is taken.
func (x *Builder) Keep(c *Case) {
	if x.ids == nil {
		x.ids = map[string]bool{}
	}
	x.ids[c.id] = true
}

// Case is one case and what the document says about it.
type Case struct {
	id, key string
	line    int
	fc      dataset.FileCase // the case as the file holds it
	payload string
	turns   []string
	notes   []string
	// scenario is the file scenario the case's agent names, when it needs
	// one: its name and raw table.
	scenario     string
	scenarioBody any
}

// ID returns the case's id.
func (c *Case) ID() string { return c.id }

// SetID gives the case another id (--id).
func (c *Case) SetID(id string) { c.id, c.fc.ID = id, id }

// Build makes the fixed case of one winning result.
func (x *Builder) Build(res *matrix.Result, w *Winner, line int) (*Case, error) {
	meta := res.Metadata
	mode, err := metaString(meta, "mode", "mode")
	if err != nil {
		return nil, err
	}
	direct := mode == "direct" || (mode == "" && res.Channel == matrix.DirectChannel && !driven(res.Agent))
	if mode != "" && mode != "direct" && mode != "indirect" {
		return nil, fmt.Errorf("metadata.mode: want \"direct\" or \"indirect\", got %+q", clip(mode, 64))
	}
	if !direct && len(w.turns) > 0 {
		return nil, errors.New("metadata.winning_turns on an indirect cell: turns are user turns, said only to a direct cell")
	}
	if direct && len(w.parts) > 0 {
		return nil, errors.New("metadata.winning_parts on a direct cell: parts are tool results, read only by an indirect cell")
	}
	if res.Agent == "" {
		return nil, errors.New("the result names no agent")
	}
	if res.Agent == "proxy" {
		return nil, errors.New("the cell ran through pikit proxy: export-case writes cases for pikit dataset run, which cannot drive an external agent through the proxy")
	}
	c := &Case{line: line, key: res.Key, payload: w.payload}

	// The config the results came from, for what a result does not record.
	var cfg *matrix.Config
	if x.Source != nil {
		var note string
		if cfg, note = x.Source.lookup(res.CaseID); cfg == nil {
			c.notes = append(c.notes, note+": its fields could not be copied")
			x.warn(line, "%s: exporting what the result records", note)
		} else if cfg.Task != res.Task {
			c.notes = append(c.notes, fmt.Sprintf("the result's task differs from that of --from %+q: the fields copied from it may not be this cell's", x.Source.ref))
			x.warn(line, "the result's task differs from that of --from %+q: its fields may not be this cell's", x.Source.ref)
		}
	}

	d := keys{"attacks": []any{attack.Fixed}}
	kwargs := map[string]any{"payload": w.payload}
	if n := len(w.turns); n > 1 {
		c.turns = w.turns[:n-1]
		kwargs["turns"] = anyList(c.turns)
		c.notes = append(c.notes, fmt.Sprintf("a crescendo conversation: %d earlier user %s, then the payload as the last turn, each said alone as in the search", n-1, plural(n-1, "turn", "turns")))
	}
	if len(w.parts) > 1 {
		c.notes = append(c.notes, fmt.Sprintf("the injection was spread over %d tool results (indirect crescendo); the fixed attack cannot spread it yet, so only the payload (the last part) is replayed, in the taint point, and the case may not land again. The earlier parts were:", len(w.parts)))
		for i, p := range w.parts[:len(w.parts)-1] {
			c.notes = append(c.notes, fmt.Sprintf("  part %d: %+q", i+1, clip(p, 400)))
		}
	}
	d["attack_specs"] = []any{spec(attack.Fixed, kwargs)}

	// Defense and channel: the result's method specs, its channel options
	// with the winning candidate's over them.
	def := specOf(res, "defense", res.Defense)
	if def.Name == "" {
		def.Name = matrix.DefaultDefense
	}
	d["defenses"] = []any{def.Name}
	if len(def.Kwargs) > 0 {
		kw, err := fileTable("method_specs.defense.kwargs", def.Kwargs)
		if err != nil {
			return nil, err
		}
		d["defense_specs"] = []any{spec(def.Name, kw)}
	}
	ch := specOf(res, "channel", res.Channel)
	d["channels"] = []any{ch.Name}
	chKwargs := maps.Clone(ch.Kwargs)
	if len(w.channel) > 0 {
		if chKwargs == nil {
			chKwargs = map[string]any{}
		}
		maps.Copy(chKwargs, w.channel)
	}
	if len(chKwargs) > 0 {
		if ch.Name == matrix.DirectChannel {
			return nil, errors.New("channel options on a direct cell (it has no channel)")
		}
		kw, err := fileTable("channel options", chKwargs)
		if err != nil {
			return nil, err
		}
		d["channel_specs"] = []any{spec(ch.Name, kw)}
	}

	// The agent: a built-in scenario, one the --from file defines, or an
	// agent runtime the --from config names.
	d["agents"] = []any{res.Agent}
	switch {
	case strings.HasPrefix(res.Agent, "runtime:"):
		if cfg == nil || cfg.Runtime == "" {
			return nil, fmt.Errorf("the cell ran through agent runtime %+q: give --from with the config that names it", clip(res.Agent, 64))
		}
		d["agents"] = anyList(cfg.Agents)
	case !isBuiltinAgent(res.Agent):
		body, note := x.scenario(res.Agent, cfg)
		if body == nil {
			return nil, errors.New(note)
		}
		c.scenario, c.scenarioBody = res.Agent, body
	}

	d["task"] = res.Task
	d["target_spec"] = res.Target
	if err := x.generation(res, d, c); err != nil {
		return nil, err
	}
	for _, f := range []struct{ meta, key string }{
		{"judge", "judge_type"}, {"data_sample", "data_sample"}, {"carrier_mode", "carrier_mode"}, {"benchmark", "benchmark"},
	} {
		s, err := metaString(meta, f.meta, f.meta)
		if err != nil {
			return nil, err
		}
		if s != "" {
			d[f.key] = s
		}
	}
	if direct {
		delete(d, "carrier_mode") // a direct cell has no carrier
		delete(d, "data_sample")
	}
	if cfg != nil {
		if err := x.copyConfig(cfg, d, c, direct); err != nil {
			return nil, err
		}
	} else {
		if v, ok := meta["target_options"]; ok {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("metadata.target_options: want an object, got %s", describeValue(v))
			}
			if d["target_options"], err = fileTable("metadata.target_options", withoutEndpoint(m, c)); err != nil {
				return nil, err
			}
			c.notes = append(c.notes, "target_options are the results' copy, with any credential in them redacted")
		}
		c.notes = append(c.notes, "not recovered (a results file does not record them): canary (the default \"HACKED\" applies), require_sink, sink_args, user_message, payload_marker, expected, defense_point, carrier_path; export with --from CONFIG_OR_DATASET to copy them")
	}

	// Id, description and where the case comes from.
	base := res.CaseID
	if base == "" {
		base = "cell"
	}
	short := fmt.Sprintf("line%d", line)
	if res.Key != "" {
		short = res.Key
		if n := 8; utf8.RuneCountInString(short) > n {
			short = string([]rune(short)[:n])
		}
	}
	c.id = base + "-adaptive-" + short
	for i := 2; x.ids[c.id]; i++ {
		c.id = fmt.Sprintf("%s-adaptive-%s-%d", base, short, i)
	}
	ref := fmt.Sprintf("pikit export-case of %s line %d", x.Results, line)
	if res.Key != "" {
		ref += ", key " + res.Key
	}
	if res.RunID != "" {
		ref += ", run " + res.RunID
	}
	c.fc = dataset.FileCase{ID: c.id, Description: describeWin(w, res), Reference: ref, Config: d}
	return c, nil
}

// driven reports whether an agent is an external one (its channel "" is
// not direct injection).
func driven(agentName string) bool {
	return agentName == "proxy" || strings.HasPrefix(agentName, "runtime:")
}

func isBuiltinAgent(name string) bool {
	return slices.Contains(agent.Names(), name)
}

// scenario returns the raw table of the file scenario an agent names, or
// nil and why there is none.
func (x *Builder) scenario(name string, cfg *matrix.Config) (any, string) {
	if x.Source == nil {
		return nil, fmt.Sprintf("agent %+q is not built in: it is defined by the [scenarios] of the file the results came from; pass that file with --from", clip(name, 64))
	}
	if body, ok := x.Source.scenarios[name]; ok {
		return body, ""
	}
	if cfg != nil && cfg.Scenarios[name] != nil && !dataset.IsFile(x.Source.ref) {
		return nil, fmt.Sprintf("agent %+q is defined by built-in dataset %+q, whose scenario tables export-case cannot copy; export from a copy of the dataset file", clip(name, 64), x.Source.ref)
	}
	return nil, fmt.Sprintf("agent %+q is neither built in nor defined by --from %+q", clip(name, 64), x.Source.ref)
}

// specOf returns a result's spec for a method kind, or the method by its
// name alone when the result has no spec for it.
func specOf(res *matrix.Result, kind, name string) matrix.Spec {
	if s, ok := res.MethodSpecs[kind]; ok && (s.Name == name || name == "") {
		return s
	}
	return matrix.Spec{Name: name}
}

// generation copies the result's generation config: temperature, max
// steps and, when the run sent one to the model, the seed.
func (x *Builder) generation(res *matrix.Result, d keys, c *Case) error {
	g := res.GenerationConfig
	if v, ok := g["temperature"]; ok {
		f, ok := v.(float64)
		if !ok || f < 0 || f > 2 {
			return fmt.Errorf("generation_config.temperature: want a number from 0 to 2, got %s", describeValue(v))
		}
		d["temperature"] = f
	}
	if v, ok := g["max_steps"]; ok {
		f, ok := v.(float64)
		if !ok || f < 1 || f != math.Trunc(f) || f > 1<<20 {
			return fmt.Errorf("generation_config.max_steps: want a whole number of at least 1, got %s", describeValue(v))
		}
		d["max_steps"] = int64(f)
	}
	if _, ok := g["seed"]; ok {
		d["seed"] = res.Seed
	} else if res.Seed != 0 {
		c.notes = append(c.notes, fmt.Sprintf("the cell's seed was %d (its repeat), but the run set no seed, so none was sent to the model: seed is left out", res.Seed))
	}
	return nil
}

// copyConfig fills in, from the config the results came from, what a
// result does not record, and what it records only when it is missing.
func (x *Builder) copyConfig(cfg *matrix.Config, d keys, c *Case, direct bool) error {
	d.text("canary", cfg.Canary)
	d.text("canary_regex", cfg.CanaryRegex)
	if cfg.CanaryFuzzy > 0 {
		d["canary_fuzzy"] = int64(cfg.CanaryFuzzy)
	}
	d.text("judge_criteria", cfg.JudgeCriteria)
	if cfg.RequireSink {
		d["require_sink"] = true
	}
	d.text("user_message", cfg.UserMessage)
	d.text("payload_marker", cfg.PayloadMarker)
	d.text("tool_protocol", cfg.ToolProtocol)
	if cfg.Reruns > 0 {
		d["reruns_without_answer"] = int64(cfg.Reruns)
	}
	d.text("expected", cfg.Expected)
	d.text("defense_point", cfg.DefensePoint)
	d.text("judge_type", cfg.JudgeType)
	d.text("benchmark", cfg.Benchmark)
	if len(cfg.Labels) > 0 {
		labels := make(map[string]any, len(cfg.Labels))
		for k, v := range cfg.Labels {
			labels[k] = v
		}
		d["labels"] = labels
	}
	d.text("runtime", cfg.Runtime)
	d.text("fixture", cfg.Fixture)
	d.missing("max_steps", int64(cfg.MaxSteps))
	d.missing("temperature", cfg.Temperature)
	if cfg.SeedSet {
		d.missing("seed", cfg.Seed)
	}
	if !direct {
		d.text("carrier_mode", cfg.CarrierMode)
		if cfg.CarrierPath != "" {
			delete(d, "data_sample")
			d["carrier_path"] = cfg.CarrierPath
			c.notes = append(c.notes, "carrier_path is the absolute path of the config's carrier: a run needs --trust-config for a path outside the file's directory")
		} else {
			d.text("data_sample", cfg.DataSample)
		}
	}
	if cfg.OutputPath != "" {
		c.notes = append(c.notes, "output_path is left out: a replay would write the tainted carrier again, over the file the first run wrote")
	}
	for _, t := range []struct {
		key string
		src map[string]any
	}{{"sink_args", cfg.SinkArgs}, {"target_options", withoutEndpoint(cfg.TargetOpts, c)},
		{"runtime_options", cfg.RuntimeOptions}, {"proxy", cfg.Sections["proxy"]}, {"mcp", cfg.Sections["mcp"]}} {
		if len(t.src) == 0 {
			continue
		}
		table, err := fileTable(t.key, t.src)
		if err != nil {
			return err
		}
		d[t.key] = table
	}
	return nil
}

// describeWin says which strategy found the injection, in how many
// rounds.
func describeWin(w *Winner, res *matrix.Result) string {
	var b strings.Builder
	b.WriteString("Winning injection of an adaptive search")
	if w.strategy != "" {
		fmt.Fprintf(&b, " (strategy %s", w.strategy)
	} else {
		b.WriteString(" (strategy not recorded")
	}
	switch {
	case w.successRound > 0:
		fmt.Fprintf(&b, ", found in round %d", w.successRound)
	case w.rounds > 0:
		fmt.Fprintf(&b, ", found within %d rounds", w.rounds)
	}
	if w.queries > 0 {
		fmt.Fprintf(&b, " after %d target %s", w.queries, plural(w.queries, "query", "queries"))
	}
	fmt.Fprintf(&b, "; outcome %s), replayed with the fixed attack.", res.Outcome)
	if res.CaseDescription != "" {
		fmt.Fprintf(&b, " Original case: %s", res.CaseDescription)
	}
	return b.String()
}

// keys are an exported case's keys beyond its id, description and
// reference (dataset.FileCase.Config), as a dataset file spells them: the
// loader's (matrix.Config's) keys. A value is text from the results, a
// number, a list or a table that fileTable made writable; an empty text is
// left out of the file.
type keys map[string]any

// text sets a key to a text from the config, unless the key is set (from
// the result) or the text is empty.
func (d keys) text(key, v string) {
	if _, set := d[key]; !set && v != "" {
		d[key] = v
	}
}

// missing sets a key to a value from the config unless the key is set.
func (d keys) missing(key string, v any) {
	if _, set := d[key]; !set {
		d[key] = v
	}
}

// spec is a method spec as a case's *_specs list holds it: its name and
// kwargs (left out when nil).
func spec(name string, kwargs map[string]any) map[string]any {
	m := map[string]any{"name": name}
	if kwargs != nil {
		m["kwargs"] = kwargs
	}
	return m
}

// anyList returns a list of strings as the []any a case's lists are.
func anyList(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// withoutEndpoint returns target options without base_url, saying so in
// the case's notes: a results file (or a config) chose that endpoint, and
// an exported case must not carry it into a file the user will run and
// share. The user gives it again with --base-url.
func withoutEndpoint(m map[string]any, c *Case) map[string]any {
	u, ok := m[target.OptBaseURL]
	if !ok {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != target.OptBaseURL {
			out[k] = v
		}
	}
	c.notes = append(c.notes, fmt.Sprintf("target_options.base_url (%s) is left out: an exported case does not choose where requests go; pass --base-url when you run it", target.Redact(fmt.Sprint(u))))
	return out
}

// fileTable converts a decoded table (from JSON results or a TOML file)
// into values dataset.Marshal writes and the loader reads back the same:
// whole JSON numbers as integers (TOML tells them apart; the loaders take
// either), nulls (TOML has none) left out; a date or time (TOML's own) is
// refused, and so is a key a terminal would act on.
func fileTable(name string, m map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if termsafe.String(k) != k {
			return nil, fmt.Errorf("%s: key %+q holds control or format characters", name, clip(k, 64))
		}
		if v == nil {
			continue
		}
		tv, err := fileValue(name+"."+k, v)
		if err != nil {
			return nil, err
		}
		out[k] = tv
	}
	return out, nil
}

func fileValue(name string, v any) (any, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			return int64(x), nil
		}
		return x, nil
	case bool, int64, int:
		return x, nil
	case []string:
		return anyList(x), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if e == nil {
				return nil, fmt.Errorf("%s[%d]: null, which TOML cannot write", name, i)
			}
			tv, err := fileValue(fmt.Sprintf("%s[%d]", name, i), e)
			if err != nil {
				return nil, err
			}
			out[i] = tv
		}
		return out, nil
	case map[string]any:
		return fileTable(name, x)
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			tv, err := fileTable(fmt.Sprintf("%s[%d]", name, i), e)
			if err != nil {
				return nil, err
			}
			out[i] = tv
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: a %T cannot be written to TOML", name, v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func clip(s string, n int) string {
	return textcut.Clip(s, n, fmt.Sprintf("…(%d bytes)", len(s)))
}

// quoteErr shows an error about the file's content in ASCII: it may quote
// text from the file.
func quoteErr(err error) string {
	s := fmt.Sprintf("%+q", clip(err.Error(), 300))
	return s[1 : len(s)-1]
}
