package matrix

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/result"
)

// Cell is one combination to run: every choice resolved, plus a stable Key.
// Cells of one plan share their *Config.
type Cell struct {
	Index   int     `json:"index"` // position in the plan
	Key     string  `json:"key"`
	Agent   string  `json:"agent"`
	Attack  Spec    `json:"attack"`
	Defense Spec    `json:"defense"`
	Channel Spec    `json:"channel"` // Name "" for direct injection
	Repeat  int     `json:"repeat_index"`
	Seed    int64   `json:"seed"`
	Config  *Config `json:"-"`
}

// Direct reports whether the cell delivers the payload in the user message.
// The cells of a driven config (Config.Driven) are never direct: their
// payload always reaches the agent in a tool result.
func (c Cell) Direct() bool {
	return c.Channel.Name == DirectChannel && (c.Config == nil || c.Config.Driven == "")
}

// Plan validates cfg and expands it into cells: agent × attack × defense ×
// channel × repeat, in that nesting order. A direct-only agent (chat) takes
// only the direct channel; any other agent given the direct channel "" uses
// its scenario's default channel. Cells that resolve to the same choices
// appear once. For large plans, Expand computes cells on demand instead.
func Plan(cfg Config) ([]Cell, error) {
	g, err := Expand(cfg)
	if err != nil {
		return nil, err
	}
	cells := make([]Cell, g.Len())
	for i := range cells {
		cells[i] = g.Cell(i)
	}
	return cells, nil
}

// Source is a sequence of cells a Runner executes.
type Source interface {
	Len() int
	Cell(i int) Cell
}

// Cells is a Source over a slice.
type Cells []Cell

// Len implements Source.
func (c Cells) Len() int { return len(c) }

// Cell implements Source.
func (c Cells) Cell(i int) Cell { return c[i] }

// Grid is an expanded config whose cells are computed on demand, so a plan
// of millions of cells takes no memory per cell.
type Grid struct {
	cfg      *Config
	attacks  []axisEntry
	defenses []axisEntry
	blocks   []block // one per agent, in order
	repeats  int
	total    int
	prefix   []byte // key material shared by every cell
}

// axisEntry is one value of an axis with its key material.
type axisEntry struct {
	spec Spec
	key  []byte
}

type block struct {
	agent    string
	channels []axisEntry
	start    int
	size     int
}

// Expand validates cfg and returns its cells as a Grid.
func Expand(cfg Config) (*Grid, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &cfg
	g := &Grid{cfg: c, repeats: c.Repeats, prefix: configKey(c)}
	g.attacks = entries(axis(c.Attacks, c.attacksSet || len(c.AttackSpecs) == 0, c.AttackSpecs, attack.AttackNames))
	g.defenses = entries(axis(c.Defenses, c.defensesSet || len(c.DefenseSpecs) == 0, c.DefenseSpecs, defense.Registry.Names))
	channels := axis(c.Channels, c.channelsSet || len(c.ChannelSpecs) == 0, c.ChannelSpecs, wildcardChannels)
	agents := expand(c.Agents, c.AgentNames)
	if c.Driven != "" {
		// One external agent, whatever agents says; every channel as given.
		agents = nil
		var chans []Spec
		for _, ch := range channels {
			chans = appendUnique(chans, ch)
		}
		size, ok := product(len(g.attacks), len(g.defenses), len(chans), g.repeats)
		if !ok {
			return nil, &Error{File: c.Source, Line: c.Line("repeats"), Key: "repeats", Msg: fmt.Sprintf("the plan has more than %d cells; lower repeats or the axes", MaxPlanCells)}
		}
		g.blocks = []block{{agent: c.Driven, channels: entries(chans), size: size}}
		g.total = size
	}
	seen := map[string]bool{}
	for _, ag := range agents {
		if seen[ag] {
			continue
		}
		seen[ag] = true
		sc, err := c.Scenario(ag)
		if err != nil {
			return nil, &Error{File: c.Source, Key: "agents", Msg: err.Error()}
		}
		var chans []Spec
		for _, ch := range channels {
			if sc.Direct() && ch.Name != DirectChannel {
				continue
			}
			if !sc.Direct() && ch.Name == DirectChannel {
				ch = specFor(sc.Channel, c.ChannelSpecs)
			}
			chans = appendUnique(chans, ch)
		}
		if len(chans) == 0 {
			continue
		}
		b := block{agent: ag, channels: entries(chans), start: g.total}
		size, ok := product(len(g.attacks), len(g.defenses), len(b.channels), g.repeats)
		if !ok || size > MaxPlanCells-g.total {
			return nil, &Error{File: c.Source, Line: c.Line("repeats"), Key: "repeats", Msg: fmt.Sprintf("the plan has more than %d cells; lower repeats or the axes", MaxPlanCells)}
		}
		b.size = size
		g.total += b.size
		g.blocks = append(g.blocks, b)
	}
	if c.OutputPath != "" && g.total > 1 {
		return nil, &Error{File: c.Source, Line: c.Line("output_path"), Key: "output_path", Msg: fmt.Sprintf("names one file, but the config plans %d cells; narrow it to one, or leave output_path out", g.total)}
	}
	if g.total == 0 {
		return nil, &Error{File: c.Source, Key: "channels", Msg: fmt.Sprintf("the plan has no cells: agents %s take only direct injection, so channels must include \"\"", strings.Join(agents, ", "))}
	}
	return g, nil
}

// MaxPlanCells bounds the cells of one plan, so that counting them never
// overflows. A plan this large could not run anyway; the CLI asks for
// confirmation far below it (--max-cells).
const MaxPlanCells = 1 << 62

// product multiplies non-negative factors, reporting false when the
// product exceeds MaxPlanCells.
func product(factors ...int) (int, bool) {
	p := 1
	for _, f := range factors {
		if f != 0 && p > MaxPlanCells/f {
			return 0, false
		}
		p *= f
	}
	return p, true
}

// Len implements Source.
func (g *Grid) Len() int { return g.total }

// Config returns the config the grid was expanded from.
func (g *Grid) Config() *Config { return g.cfg }

// Cell implements Source: the i-th cell in plan order.
func (g *Grid) Cell(i int) Cell {
	bi := len(g.blocks) - 1
	for bi > 0 && g.blocks[bi].start > i {
		bi--
	}
	b := &g.blocks[bi]
	j := i - b.start
	r := j % g.repeats
	j /= g.repeats
	ch := b.channels[j%len(b.channels)]
	j /= len(b.channels)
	df := g.defenses[j%len(g.defenses)]
	at := g.attacks[j/len(g.defenses)]
	cell := Cell{Index: i, Agent: b.agent, Attack: at.spec, Defense: df.spec, Channel: ch.spec, Repeat: r, Seed: g.cfg.Seed + int64(r), Config: g.cfg}
	h := sha256.New()
	h.Write(g.prefix)
	h.Write([]byte(b.agent))
	h.Write([]byte{0})
	h.Write(at.key)
	h.Write(df.key)
	h.Write(ch.key)
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], uint64(r))
	binary.LittleEndian.PutUint64(buf[8:], uint64(cell.Seed))
	h.Write(buf[:])
	var sum [sha256.Size]byte
	cell.Key = hex.EncodeToString(h.Sum(sum[:0])[:8])
	return cell
}

func entries(specs []Spec) []axisEntry {
	out := make([]axisEntry, len(specs))
	for i, s := range specs {
		// The key's material: map keys sorted, independent of config order.
		b, _ := result.SpecKey(s)
		// Kwargs {} once per entry, so that no cell's result allocates
		// its own (see withKwargs).
		out[i] = axisEntry{spec: withKwargs(s), key: append(b, 0)}
	}
	return out
}

func appendUnique(list []Spec, s Spec) []Spec {
	for _, o := range list {
		if o.Name == s.Name && reflect.DeepEqual(o.Kwargs, s.Kwargs) {
			return list
		}
	}
	return append(list, s)
}

// wildcardChannels are the channels "*" names: every one but raw, which
// only delivers the payload as it is, and the web placements (web_*),
// which place it in a page for pikit web: the Python pikit's "*" (it has
// neither). Defenses' "*" is no defense and every prompt defense, as
// there: detectors are named one by one.
func wildcardChannels() []string {
	return slices.DeleteFunc(channel.Names(), func(n string) bool { return n == "raw" || channel.IsWeb(n) })
}

// expand replaces "*" by every registered name.
func expand(names []string, all func() []string) []string {
	var out []string
	for _, n := range names {
		if n == WildcardName {
			out = append(out, all()...)
		} else {
			out = append(out, n)
		}
	}
	return out
}

// axis builds one axis from plain names and specs: a name with specs takes
// each spec as a variant; specs of other names are added; when the names
// were not given, specs alone make the axis.
func axis(names []string, useNames bool, specs []Spec, all func() []string) []Spec {
	var out []Spec
	add := func(s Spec) { out = appendUnique(out, s) }
	used := map[int]bool{}
	if useNames {
		for _, n := range expand(names, all) {
			found := false
			for i, s := range specs {
				if s.Name == n {
					add(s)
					used[i], found = true, true
				}
			}
			if !found {
				add(Spec{Name: n})
			}
		}
	}
	for i, s := range specs {
		if !used[i] {
			add(s)
		}
	}
	return out
}

// specFor returns the first spec for name, or name with default options.
func specFor(name string, specs []Spec) Spec {
	for _, s := range specs {
		if s.Name == name {
			return s
		}
	}
	return Spec{Name: name}
}

// configKey encodes everything of the config that can change a cell's
// outcome, besides the cell's own choices. encoding/json sorts map keys, so
// the key does not depend on field order in the config file.
func configKey(cfg *Config) []byte {
	material := struct {
		Case        string         `json:"case,omitempty"`
		SeedSet     bool           `json:"seed_set"`
		Task        string         `json:"task"`
		Canary      string         `json:"canary"`
		RequireSink bool           `json:"require_sink"`
		SinkArgs    map[string]any `json:"sink_args"`
		Target      string         `json:"target"`
		TargetOpts  map[string]any `json:"target_options"`
		Judge       string         `json:"judge"`
		UserMessage string         `json:"user_message"`
		DataSample  string         `json:"data_sample"`
		MaxSteps    int            `json:"max_steps"`
		CarrierMode string         `json:"carrier_mode"`
		Temperature float64        `json:"temperature"`
		Expected    string         `json:"expected,omitempty"`
		// What drives external agents; omitted when unset, so the keys of
		// plain configs do not change.
		DefensePoint   string                    `json:"defense_point,omitempty"`
		Carrier        string                    `json:"carrier,omitempty"`
		Driven         string                    `json:"driven,omitempty"`
		Via            string                    `json:"via,omitempty"`
		Runtime        string                    `json:"runtime,omitempty"`
		RuntimeOptions map[string]any            `json:"runtime_options,omitempty"`
		Fixture        string                    `json:"fixture,omitempty"`
		Sections       map[string]map[string]any `json:"sections,omitempty"`
		Scenarios      map[string]string         `json:"scenarios,omitempty"`
		Attacker       string                    `json:"attacker,omitempty"`
		Prefetch       bool                      `json:"prefetch,omitempty"`
		PayloadMarker  string                    `json:"payload_marker,omitempty"`
		CanaryRegex    string                    `json:"canary_regex,omitempty"`
		JudgeCriteria  string                    `json:"judge_criteria,omitempty"`
		Reruns         int                       `json:"reruns_without_answer,omitempty"`
		CanaryFuzzy    int                       `json:"canary_fuzzy,omitempty"`
		ToolProtocol   string                    `json:"tool_protocol,omitempty"`
	}{cfg.CaseID, cfg.SeedSet, cfg.Task, cfg.Canary, cfg.RequireSink, cfg.SinkArgs, cfg.TargetSpec, cfg.TargetOpts,
		cfg.JudgeType, cfg.UserMessage, cfg.DataSample, cfg.MaxSteps, cfg.CarrierMode, cfg.Temperature, cfg.Expected,
		cfg.DefensePoint, carrierDigest(cfg.CarrierData), cfg.Driven, cfg.Via, cfg.Runtime, cfg.RuntimeOptions, cfg.Fixture, cfg.Sections, cfg.scenarioKey(), cfg.attackerKey(), cfg.Prefetch, cfg.PayloadMarker, cfg.CanaryRegex, cfg.JudgeCriteria, cfg.Reruns, cfg.CanaryFuzzy, cfg.ToolProtocol}
	b, err := json.Marshal(material)
	if err != nil {
		// Only unsupported option values (validated away) can fail here.
		b = fmt.Appendf(nil, "%#v", material)
	}
	return append(b, 0)
}

// Shard returns which of n shards a cell key falls in (0-based): a stable
// hash, so every machine of a sharded run agrees.
func Shard(key string, n int) int {
	if n <= 1 {
		return 0
	}
	v, err := strconv.ParseUint(key, 16, 64)
	if err != nil {
		h := sha256.Sum256([]byte(key))
		v = binary.LittleEndian.Uint64(h[:8])
	}
	return int(v % uint64(n))
}

// carrierDigest identifies a user's carrier file by its text, "" for none.
func carrierDigest(data string) string {
	if data == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(data))
	return hex.EncodeToString(sum[:12])
}
