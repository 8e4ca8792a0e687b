package matrix

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/defense"
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
func (c Cell) Direct() bool { return c.Channel.Name == DirectChannel }

// Plan validates cfg and expands it into cells: agent × attack × defense ×
// channel × repeat, in that nesting order. A direct-only agent (chat) takes
// only the direct channel; any other agent given the direct channel "" uses
// its scenario's default channel. Cells that resolve to the same choices
// appear once.
func Plan(cfg Config) ([]Cell, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	shared := cfg
	c := &shared
	agents := expand(c.Agents, agent.Names)
	attacks := axis(c.Attacks, c.attacksSet || len(c.AttackSpecs) == 0, c.AttackSpecs, attack.Names)
	defenses := axis(c.Defenses, c.defensesSet || len(c.DefenseSpecs) == 0, c.DefenseSpecs, defense.AllNames)
	channels := axis(c.Channels, c.channelsSet || len(c.ChannelSpecs) == 0, c.ChannelSpecs, channel.Names)

	var cells []Cell
	seen := map[string]bool{}
	for _, ag := range agents {
		sc, err := agent.Lookup(ag)
		if err != nil {
			return nil, &Error{File: c.Source, Key: "agents", Msg: err.Error()}
		}
		for _, at := range attacks {
			for _, df := range defenses {
				for _, ch := range channels {
					if sc.Direct() && ch.Name != DirectChannel {
						continue
					}
					if !sc.Direct() && ch.Name == DirectChannel {
						ch = specFor(sc.Channel, c.ChannelSpecs)
					}
					for r := 0; r < c.Repeats; r++ {
						cell := Cell{Agent: ag, Attack: at, Defense: df, Channel: ch, Repeat: r, Seed: c.Seed + int64(r), Config: c}
						cell.Key = cellKey(cell)
						if seen[cell.Key] {
							continue
						}
						seen[cell.Key] = true
						cell.Index = len(cells)
						cells = append(cells, cell)
					}
				}
			}
		}
	}
	if len(cells) == 0 {
		return nil, &Error{File: c.Source, Key: "channels", Msg: fmt.Sprintf("the plan has no cells: agents %s take only direct injection, so channels must include \"\"", strings.Join(agents, ", "))}
	}
	return cells, nil
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
	add := func(s Spec) {
		for _, o := range out {
			if o.Name == s.Name && reflect.DeepEqual(o.Kwargs, s.Kwargs) {
				return
			}
		}
		out = append(out, s)
	}
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

// cellKey hashes everything that can change a cell's outcome. Map keys are
// sorted by encoding/json, so the key does not depend on field order in the
// config file.
func cellKey(c Cell) string {
	cfg := c.Config
	material := struct {
		Case        string         `json:"case,omitempty"`
		Agent       string         `json:"agent"`
		Attack      Spec           `json:"attack"`
		Defense     Spec           `json:"defense"`
		Channel     Spec           `json:"channel"`
		Repeat      int            `json:"repeat"`
		Seed        int64          `json:"seed"`
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
	}{cfg.CaseID, c.Agent, c.Attack, c.Defense, c.Channel, c.Repeat, c.Seed, cfg.SeedSet, cfg.Task, cfg.Canary, cfg.RequireSink,
		cfg.SinkArgs, cfg.TargetSpec, cfg.TargetOpts, cfg.JudgeType, cfg.UserMessage, cfg.DataSample, cfg.MaxSteps, cfg.CarrierMode, cfg.Temperature}
	b, err := json.Marshal(material)
	if err != nil {
		// Only unsupported option values (validated away) can fail here.
		b = fmt.Appendf(nil, "%#v", material)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
