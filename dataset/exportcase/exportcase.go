// Package exportcase makes dataset cases of the winning injections of
// adaptive searches (pikit export-case): each result's winning candidate,
// replayed with the fixed attack under the cell's defense, channel, agent
// and target, with what the result does not record copied from the config
// or dataset it came from (--from). The cases are written with
// dataset.Marshal and read back through dataset.Parse before they are
// handed out.
package exportcase

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
	"github.com/pikit-go/pikit/target"
)

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

// ID returns the case's id.
func (c *Case) ID() string { return c.id }

// SetID gives the case another id (--id).
func (c *Case) SetID(id string) { c.id, c.doc.ID = id, id }

// Size returns the bytes of the winning texts.
func (w *Winner) Size() int { return w.size }

// Parts returns how many tool results the injection was spread over (1
// or 0 for one).
func (w *Winner) Parts() int { return len(w.parts) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func clip(s string, n int) string {
	return textcut.Clip(s, n, fmt.Sprintf("…(%d bytes)", len(s)))
}

// Source is what --from names: one experiment config, or a dataset
// whose cases are looked up by id; scenarios are the raw tables of its
// file's [scenarios], for cases whose agent the file defines.
type Source struct {
	ref       string
	cfg       *matrix.Config
	ds        *dataset.Dataset
	cases     map[string]*matrix.Config
	scenarios map[string]any
}

// LoadSource loads --from with the project's loaders: a built-in
// dataset by name, else a file, which is a dataset when it has [[cases]]
// and an experiment config otherwise.
func LoadSource(ref string) (*Source, error) {
	src := &Source{ref: ref}
	var data []byte
	if dataset.IsFile(ref) {
		info, err := os.Stat(ref)
		switch {
		case err != nil:
			return nil, fmt.Errorf("--from: %w", err)
		case !info.Mode().IsRegular():
			return nil, fmt.Errorf("--from %s: not a regular file", ref)
		case info.Size() > MaxSourceBytes:
			return nil, fmt.Errorf("--from %s: %d bytes, over the %d MiB export-case reads", ref, info.Size(), MaxSourceBytes>>20)
		}
		if data, err = os.ReadFile(ref); err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		table, _, err := matrix.ParseTOML(ref, data)
		if err != nil {
			return nil, err
		}
		src.scenarios, _ = table["scenarios"].(map[string]any)
		if _, ok := table["cases"]; !ok {
			cfg, err := matrix.Parse(ref, data)
			if err != nil {
				return nil, err
			}
			if cfg.Empty() {
				return nil, fmt.Errorf("--from %s: the config sets nothing", ref)
			}
			src.cfg = &cfg
			return src, nil
		}
		if src.ds, err = dataset.Parse(ref, data); err != nil {
			return nil, err
		}
	} else {
		ds, err := dataset.Load(ref)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		src.ds = ds
		if data, err := dataset.Source(ref); err == nil {
			if table, _, err := matrix.ParseTOML("builtin/"+ref+".toml", data); err == nil {
				src.scenarios, _ = table["scenarios"].(map[string]any)
			}
		}
	}
	src.cases = map[string]*matrix.Config{}
	for i := range src.ds.Cases {
		c := &src.ds.Cases[i]
		src.cases[c.ID] = &c.Config
	}
	return src, nil
}

// lookup returns the config of a result's cell: the single config, or the
// dataset case of the result's case id; note says why there is none.
func (s *Source) lookup(caseID string) (cfg *matrix.Config, note string) {
	if s.cfg != nil {
		return s.cfg, ""
	}
	if cfg := s.cases[caseID]; cfg != nil {
		return cfg, ""
	}
	if caseID == "" {
		return nil, fmt.Sprintf("the result names no dataset case, and --from %+q is a dataset", s.ref)
	}
	return nil, fmt.Sprintf("dataset %+q has no case %+q", s.ref, caseID)
}

// Case is one case and what the document says about it.
type Case struct {
	id, key string
	line    int
	doc     caseDoc
	payload string
	turns   []string
	notes   []string
	// scenario is the file scenario the case's agent names, when it needs
	// one: its name and raw table.
	scenario     string
	scenarioBody any
}

// quoteErr shows an error about the file's content in ASCII: it may quote
// text from the file.
func quoteErr(err error) string {
	s := fmt.Sprintf("%+q", clip(err.Error(), 300))
	return s[1 : len(s)-1]
}

// Winner is what an adaptive result says about its winning candidate.
type Winner struct {
	payload  string
	turns    []string // every user turn of a direct crescendo win, the last the payload
	parts    []string // the parts of an indirect crescendo win, the last the payload
	channel  map[string]any
	strategy string
	stop     string
	// rounds sent, the round that succeeded, and the target's queries up
	// to it; 0 when not recorded.
	rounds, successRound, queries int
	size                          int // bytes of payload, turns and parts
}

// WinnerOf reads the winning candidate of a result's metadata, checking
// every type (the file is untrusted); nil when it records none.
func WinnerOf(res *matrix.Result) (*Winner, error) {
	meta := res.Metadata
	v, ok := meta["winning_injection"]
	if !ok {
		return nil, nil
	}
	payload, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("metadata.winning_injection: want a string, got %s", describeValue(v))
	}
	if payload == "" {
		return nil, errors.New("metadata.winning_injection is empty")
	}
	w := &Winner{payload: payload, size: len(payload)}
	var err error
	if w.turns, err = stringList(meta, "winning_turns"); err != nil {
		return nil, err
	}
	if w.parts, err = stringList(meta, "winning_parts"); err != nil {
		return nil, err
	}
	for _, s := range append(slices.Clone(w.turns), w.parts...) {
		w.size += len(s)
	}
	if w.size > maxWinningBytes {
		return nil, fmt.Errorf("the winning injection holds %d bytes, over the %d MiB export-case reads", w.size, maxWinningBytes>>20)
	}
	if n := len(w.turns); n > 0 && w.turns[n-1] != payload {
		return nil, errors.New("metadata.winning_turns: the last turn is not metadata.winning_injection")
	}
	if n := len(w.parts); n > 0 && w.parts[n-1] != payload {
		return nil, errors.New("metadata.winning_parts: the last part is not metadata.winning_injection")
	}
	if c, ok := meta["winning_channel_options"]; ok {
		if w.channel, ok = c.(map[string]any); !ok {
			return nil, fmt.Errorf("metadata.winning_channel_options: want an object, got %s", describeValue(c))
		}
	}
	if a, ok := meta["adaptive"]; ok {
		m, ok := a.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("metadata.adaptive: want an object, got %s", describeValue(a))
		}
		if w.strategy, err = metaString(m, "adaptive.strategy", "strategy"); err != nil {
			return nil, err
		}
		if w.stop, err = metaString(m, "adaptive.stop", "stop"); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			key string
			dst *int
		}{{"rounds", &w.rounds}, {"success_round", &w.successRound}, {"queries_to_success", &w.queries}} {
			if *f.dst, err = metaCount(m, "adaptive."+f.key, f.key); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// describeValue names a JSON value for a message, quoted in ASCII.
func describeValue(v any) string {
	s := fmt.Sprintf("%+q", clip(method.Describe(v), 80))
	return s[1 : len(s)-1]
}

// metaString reads an optional string of a metadata object.
func metaString(m map[string]any, name, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("metadata.%s: want a string, got %s", name, describeValue(v))
	}
	return s, nil
}

// metaCount reads an optional count (a whole number, 0 or more).
func metaCount(m map[string]any, name, key string) (int, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, nil
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > 1<<40 {
		return 0, fmt.Errorf("metadata.%s: want a whole number, got %s", name, describeValue(v))
	}
	return int(f), nil
}

// stringList reads an optional list of strings of the metadata.
func stringList(m map[string]any, key string) ([]string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("metadata.%s: want a list of strings, got %s", key, describeValue(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, fmt.Errorf("metadata.%s[%d]: want a string, got %s", key, i, describeValue(e))
		}
	}
	return out, nil
}

// build makes the fixed case of one winning result.
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

	d := caseDoc{Attacks: []any{attack.Fixed}}
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
	d.AttackSpecs = []specDoc{{Name: attack.Fixed, Kwargs: kwargs}}

	// Defense and channel: the result's method specs, its channel options
	// with the winning candidate's over them.
	def := specOf(res, "defense", res.Defense)
	if def.Name == "" {
		def.Name = matrix.DefaultDefense
	}
	d.Defenses = []any{def.Name}
	if len(def.Kwargs) > 0 {
		kw, err := fileTable("method_specs.defense.kwargs", def.Kwargs)
		if err != nil {
			return nil, err
		}
		d.DefenseSpecs = []specDoc{{Name: def.Name, Kwargs: kw}}
	}
	ch := specOf(res, "channel", res.Channel)
	d.Channels = []any{ch.Name}
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
		d.ChannelSpecs = []specDoc{{Name: ch.Name, Kwargs: kw}}
	}

	// The agent: a built-in scenario, one the --from file defines, or an
	// agent runtime the --from config names.
	d.Agents = []any{res.Agent}
	switch {
	case strings.HasPrefix(res.Agent, "runtime:"):
		if cfg == nil || cfg.Runtime == "" {
			return nil, fmt.Errorf("the cell ran through agent runtime %+q: give --from with the config that names it", clip(res.Agent, 64))
		}
		d.Agents = anyList(cfg.Agents)
	case !isBuiltinAgent(res.Agent):
		body, note := x.scenario(res.Agent, cfg)
		if body == nil {
			return nil, errors.New(note)
		}
		c.scenario, c.scenarioBody = res.Agent, body
	}

	d.Task = res.Task
	d.TargetSpec = res.Target
	if err := x.generation(res, &d, c); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		key string
		dst *any
	}{{"judge", &d.JudgeType}, {"data_sample", &d.DataSample}, {"carrier_mode", &d.CarrierMode}, {"benchmark", &d.Benchmark}} {
		s, err := metaString(meta, f.key, f.key)
		if err != nil {
			return nil, err
		}
		if s != "" {
			*f.dst = s
		}
	}
	if direct {
		d.CarrierMode, d.DataSample = nil, nil // a direct cell has no carrier
	}
	if cfg != nil {
		if err := x.copyConfig(cfg, &d, c, direct); err != nil {
			return nil, err
		}
	} else {
		if v, ok := meta["target_options"]; ok {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("metadata.target_options: want an object, got %s", describeValue(v))
			}
			if d.TargetOptions, err = fileTable("metadata.target_options", withoutEndpoint(m, c)); err != nil {
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
	d.ID = c.id
	d.Description = describeWin(w, res)
	ref := fmt.Sprintf("pikit export-case of %s line %d", x.Results, line)
	if res.Key != "" {
		ref += ", key " + res.Key
	}
	if res.RunID != "" {
		ref += ", run " + res.RunID
	}
	d.Reference = ref
	c.doc = d
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
func (x *Builder) generation(res *matrix.Result, d *caseDoc, c *Case) error {
	g := res.GenerationConfig
	if v, ok := g["temperature"]; ok {
		f, ok := v.(float64)
		if !ok || f < 0 || f > 2 {
			return fmt.Errorf("generation_config.temperature: want a number from 0 to 2, got %s", describeValue(v))
		}
		d.Temperature = f
	}
	if v, ok := g["max_steps"]; ok {
		f, ok := v.(float64)
		if !ok || f < 1 || f != math.Trunc(f) || f > 1<<20 {
			return fmt.Errorf("generation_config.max_steps: want a whole number of at least 1, got %s", describeValue(v))
		}
		d.MaxSteps = int64(f)
	}
	if _, ok := g["seed"]; ok {
		d.Seed = res.Seed
	} else if res.Seed != 0 {
		c.notes = append(c.notes, fmt.Sprintf("the cell's seed was %d (its repeat), but the run set no seed, so none was sent to the model: seed is left out", res.Seed))
	}
	return nil
}

// copyConfig fills in, from the config the results came from, what a
// result does not record, and what it records only when it is missing.
func (x *Builder) copyConfig(cfg *matrix.Config, d *caseDoc, c *Case, direct bool) error {
	str := func(dst *any, v string) {
		if *dst == nil && v != "" {
			*dst = v
		}
	}
	str(&d.Canary, cfg.Canary)
	str(&d.CanaryRegex, cfg.CanaryRegex)
	if cfg.CanaryFuzzy > 0 {
		d.CanaryFuzzy = int64(cfg.CanaryFuzzy)
	}
	str(&d.JudgeCriteria, cfg.JudgeCriteria)
	d.RequireSink = cfg.RequireSink
	str(&d.UserMessage, cfg.UserMessage)
	str(&d.PayloadMarker, cfg.PayloadMarker)
	str(&d.ToolProtocol, cfg.ToolProtocol)
	if cfg.Reruns > 0 {
		d.Reruns = int64(cfg.Reruns)
	}
	str(&d.Expected, cfg.Expected)
	str(&d.DefensePoint, cfg.DefensePoint)
	str(&d.JudgeType, cfg.JudgeType)
	str(&d.Benchmark, cfg.Benchmark)
	if d.Labels == nil && len(cfg.Labels) > 0 {
		d.Labels = make(map[string]any, len(cfg.Labels))
		for k, v := range cfg.Labels {
			d.Labels[k] = v
		}
	}
	str(&d.Runtime, cfg.Runtime)
	str(&d.Fixture, cfg.Fixture)
	if d.MaxSteps == nil {
		d.MaxSteps = int64(cfg.MaxSteps)
	}
	if d.Temperature == nil {
		d.Temperature = cfg.Temperature
	}
	if d.Seed == nil && cfg.SeedSet {
		d.Seed = cfg.Seed
	}
	if !direct {
		str(&d.CarrierMode, cfg.CarrierMode)
		if cfg.CarrierPath != "" {
			d.DataSample = nil
			d.CarrierPath = cfg.CarrierPath
			c.notes = append(c.notes, "carrier_path is the absolute path of the config's carrier: a run needs --trust-config for a path outside the file's directory")
		} else {
			str(&d.DataSample, cfg.DataSample)
		}
	}
	if cfg.OutputPath != "" {
		c.notes = append(c.notes, "output_path is left out: a replay would write the tainted carrier again, over the file the first run wrote")
	}
	var err error
	for _, t := range []struct {
		name string
		dst  *map[string]any
		src  map[string]any
	}{{"sink_args", &d.SinkArgs, cfg.SinkArgs}, {"target_options", &d.TargetOptions, withoutEndpoint(cfg.TargetOpts, c)},
		{"runtime_options", &d.RuntimeOptions, cfg.RuntimeOptions}, {"proxy", &d.Proxy, cfg.Sections["proxy"]}, {"mcp", &d.MCP, cfg.Sections["mcp"]}} {
		if len(t.src) == 0 {
			continue
		}
		if *t.dst, err = fileTable(t.name, t.src); err != nil {
			return err
		}
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

// caseDoc is one exported case as the dataset file spells it: its keys
// are the toml tags (see fileCase). Fields of type any hold text from the
// results or a number; nil leaves a key out.
type caseDoc struct {
	ID             any            `toml:"id"`
	Description    any            `toml:"description"`
	Reference      any            `toml:"reference,omitempty"`
	Attacks        []any          `toml:"attacks"`
	AttackSpecs    []specDoc      `toml:"attack_specs,inline"`
	Defenses       []any          `toml:"defenses"`
	DefenseSpecs   []specDoc      `toml:"defense_specs,omitempty,inline"`
	Channels       []any          `toml:"channels"`
	ChannelSpecs   []specDoc      `toml:"channel_specs,omitempty,inline"`
	Agents         []any          `toml:"agents"`
	Task           any            `toml:"task,omitempty"`
	Canary         any            `toml:"canary,omitempty"`
	CanaryRegex    any            `toml:"canary_regex,omitempty"`
	CanaryFuzzy    any            `toml:"canary_fuzzy,omitempty"`
	JudgeCriteria  any            `toml:"judge_criteria,omitempty"`
	RequireSink    bool           `toml:"require_sink,omitempty"`
	SinkArgs       map[string]any `toml:"sink_args,omitempty,inline"`
	UserMessage    any            `toml:"user_message,omitempty"`
	PayloadMarker  any            `toml:"payload_marker,omitempty"`
	Expected       any            `toml:"expected,omitempty"`
	DefensePoint   any            `toml:"defense_point,omitempty"`
	TargetSpec     any            `toml:"target_spec,omitempty"`
	TargetOptions  map[string]any `toml:"target_options,omitempty,inline"`
	JudgeType      any            `toml:"judge_type,omitempty"`
	DataSample     any            `toml:"data_sample,omitempty"`
	CarrierPath    any            `toml:"carrier_path,omitempty"`
	CarrierMode    any            `toml:"carrier_mode,omitempty"`
	MaxSteps       any            `toml:"max_steps,omitempty"`
	Reruns         any            `toml:"reruns_without_answer,omitempty"`
	ToolProtocol   any            `toml:"tool_protocol,omitempty"`
	Temperature    any            `toml:"temperature,omitempty"`
	Seed           any            `toml:"seed,omitempty"`
	Benchmark      any            `toml:"benchmark,omitempty"`
	Labels         map[string]any `toml:"labels,omitempty,inline"`
	Runtime        any            `toml:"runtime,omitempty"`
	RuntimeOptions map[string]any `toml:"runtime_options,omitempty,inline"`
	Fixture        any            `toml:"fixture,omitempty"`
	Proxy          map[string]any `toml:"proxy,omitempty"`
	MCP            map[string]any `toml:"mcp,omitempty"`
}

type specDoc struct {
	Name   any            `toml:"name"`
	Kwargs map[string]any `toml:"kwargs,omitempty"`
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

// fileCase returns the case as a dataset file holds it: its id,
// description and reference, and the rest of its keys (a field's toml
// tag) in Config, those marked omitempty left out when empty.
func (d caseDoc) fileCase() (dataset.FileCase, error) {
	m, err := docMap(reflect.ValueOf(d))
	if err != nil {
		return dataset.FileCase{}, err
	}
	fc := dataset.FileCase{Config: m}
	for k, dst := range map[string]*string{"id": &fc.ID, "description": &fc.Description, "reference": &fc.Reference} {
		if v, ok := m[k].(string); ok {
			*dst = v
		}
		delete(m, k)
	}
	return fc, nil
}

// docMap turns a struct of toml-tagged fields into the table a dataset
// file writes: nested structs (specDoc) become tables, slices of them
// lists of tables.
func docMap(v reflect.Value) (map[string]any, error) {
	out := map[string]any{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("toml"), ",")
		fv := v.Field(i)
		if name == "" || name == "-" {
			continue
		}
		if strings.Contains(opts, "omitempty") && fv.IsZero() {
			continue
		}
		if fv.Kind() == reflect.Slice && fv.Len() == 0 && strings.Contains(opts, "omitempty") {
			continue
		}
		val, err := docValue(fv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if val != nil {
			out[name] = val
		}
	}
	return out, nil
}

func docValue(v reflect.Value) (any, error) {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return v.Interface(), nil
	case reflect.Struct:
		return docMap(v)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct {
			out := make([]any, v.Len())
			for i := range v.Len() {
				m, err := docMap(v.Index(i))
				if err != nil {
					return nil, err
				}
				out[i] = m
			}
			return out, nil
		}
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
	}
	return v.Interface(), nil
}

// file makes the dataset file of cases, with the scenario tables they
// name copied from --from.
func (x *Builder) file(cases []*Case) (*dataset.File, error) {
	f := &dataset.File{Meta: x.meta()}
	for _, c := range cases {
		fc, err := c.doc.fileCase()
		if err != nil {
			return nil, err
		}
		f.Cases = append(f.Cases, fc)
		if c.scenario == "" {
			continue
		}
		body, err := fileValue("scenarios."+c.scenario, c.scenarioBody)
		if err != nil {
			return nil, err
		}
		table, ok := body.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("scenarios.%s: want a table, got %s", c.scenario, describeValue(c.scenarioBody))
		}
		if f.ScenarioTables == nil {
			f.ScenarioTables = map[string]map[string]any{}
		}
		f.ScenarioTables[c.scenario] = table
	}
	return f, nil
}

func (x *Builder) meta() dataset.Meta {
	name := strings.TrimSuffix(filepath.Base(x.Results), filepath.Ext(x.Results))
	if x.Results == "-" {
		name = "stdin"
	}
	return dataset.Meta{
		Name:        name + "-adaptive",
		Description: fmt.Sprintf("Winning injections of the adaptive results in %s, replayed with the fixed attack (pikit export-case)", x.Results),
	}
}

// check makes sure a case loads with the dataset loader on its own, so a
// result naming an unknown method, option or agent is skipped with a
// warning rather than spoiling the file.
func (x *Builder) Check(c *Case) error {
	f, err := x.file([]*Case{c})
	if err != nil {
		return err
	}
	b, err := dataset.Marshal(f)
	if err != nil {
		return err
	}
	if _, err := dataset.Parse(x.DocName, b); err != nil {
		return errors.New(quoteErr(caseError(err)))
	}
	return nil
}

// caseError says what the loader found wrong with a case checked on its
// own, without the lines of the document it was checked in.
func caseError(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var msgs []string
		for _, e := range j.Unwrap() {
			msgs = append(msgs, caseError(e).Error())
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	var me *matrix.Error
	if errors.As(err, &me) {
		if me.Key != "" {
			return fmt.Errorf("%s: %s", me.Key, me.Msg)
		}
		return errors.New(me.Msg)
	}
	return err
}

// document encodes every case, with a comment on top saying where they
// come from and what could not be recovered, and checks that the dataset
// loader reads back every payload and turn exactly.
func (x *Builder) Document(cases []*Case) ([]byte, error) {
	f, err := x.file(cases)
	if err != nil {
		return nil, fmt.Errorf("export-case: %w", err)
	}
	body, err := dataset.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("export-case: encoding the cases: %w", err)
	}
	var out bytes.Buffer
	x.header(&out, cases)
	out.Write(body)
	b := out.Bytes()
	if err := x.verify(b, cases); err != nil {
		return nil, fmt.Errorf("export-case: the encoded cases do not read back as written (a bug; nothing was written): %w", err)
	}
	return b, nil
}

// header writes the comment on top of the file. Every value from the
// results is quoted in ASCII (%+q): no newline can end the comment.
func (x *Builder) header(w io.Writer, cases []*Case) {
	fmt.Fprintf(w, "# Exported by pikit export-case from %+q: the winning injections of adaptive\n", x.Results)
	fmt.Fprintln(w, "# searches, each replayed with the fixed attack. Run them again with:")
	fmt.Fprintln(w, "#     pikit dataset run FILE.toml")
	if x.Source != nil {
		fmt.Fprintf(w, "# Fields a result does not record were copied from %+q.\n", x.Source.ref)
	}
	for _, c := range cases {
		if len(c.notes) == 0 {
			continue
		}
		fmt.Fprintf(w, "#\n# case %+q (line %d of the results):\n", c.id, c.line)
		for _, n := range c.notes {
			fmt.Fprintf(w, "#   %s\n", n)
		}
	}
	fmt.Fprintln(w)
}

// verify decodes the document with the dataset loader and with the TOML
// library, and compares each case's id, payload and turns with what was
// meant; it also makes sure nothing in it would act on a terminal, so
// standard output carries it byte for byte.
func (x *Builder) verify(b []byte, cases []*Case) error {
	if termsafe.String(string(b)) != string(b) {
		return errors.New("a control or format character is left raw")
	}
	ds, err := dataset.Parse(x.DocName, b)
	if err != nil {
		return errors.New(quoteErr(err))
	}
	var back struct {
		Cases []struct {
			ID          string `toml:"id"`
			AttackSpecs []struct {
				Kwargs struct {
					Payload string   `toml:"payload"`
					Turns   []string `toml:"turns"`
				} `toml:"kwargs"`
			} `toml:"attack_specs"`
		} `toml:"cases"`
	}
	if err := toml.Unmarshal(b, &back); err != nil {
		return err
	}
	if len(back.Cases) != len(cases) || len(ds.Cases) != len(cases) {
		return fmt.Errorf("%d cases read back, %d written", len(back.Cases), len(cases))
	}
	for i, c := range cases {
		got := back.Cases[i]
		if got.ID != c.id || ds.Cases[i].ID != c.id || len(got.AttackSpecs) != 1 {
			return fmt.Errorf("case %d: id %+q read back as %+q", i+1, c.id, got.ID)
		}
		kw := got.AttackSpecs[0].Kwargs
		if kw.Payload != c.payload || !slices.Equal(kw.Turns, c.turns) {
			return fmt.Errorf("case %+q: the payload or turns read back differently", c.id)
		}
	}
	return nil
}
