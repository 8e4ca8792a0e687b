package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/internal/safefile"

	"github.com/pelletier/go-toml/v2"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/internal/tomlpos"
	"github.com/pikit-go/pikit/method"
)

// flatKeys are the config keys accepted at the top level of a flat config,
// in [matrix], and in a dataset case. attack, defense, channel and agent are
// one-element forms of the lists; marker is the Python pikit's older name of
// canary.
var flatKeys = []string{
	"attacks", "attack", "attack_specs", "defenses", "defense", "defense_specs",
	"channels", "channel", "channel_specs", "agents", "agent", "task", "canary", "marker",
	"canary_regex", "canary_fuzzy", "judge_criteria", "require_sink", "sink_args", "target_spec", "judge_type", "user_message", "payload_marker", "data_sample",
	"max_steps", "reruns_without_answer", "tool_protocol", "prefetch", "carrier_mode", "temperature", "repeats", "target_options", "seed",
	"expected", "utility_canary", "runtime", "runtime_options", "fixture", "benchmark", "labels", "defense_point", "carrier_path", "data_file", "output_path", "attacker_target",
}

// SectionNames are the tables a config may hold for the drivers of
// external agents, kept whole in Config.Sections.
var SectionNames = []string{"proxy", "mcp", "web"}

var judgeKeys = []string{"type", "canary", "marker", "canary_regex", "canary_fuzzy", "judge_criteria", "require_sink", "sink_args"}

// DefaultMaxFileBytes bounds a config or dataset file: a file is read
// whole and decoded into tables many times its size, so a bound keeps a
// hostile (or mistaken) file from taking the machine's memory.
const DefaultMaxFileBytes = 16 << 20

// LoadFile reads and validates an experiment config file of at most
// DefaultMaxFileBytes.
func LoadFile(path string) (Config, error) {
	return LoadFileMax(path, DefaultMaxFileBytes)
}

// LoadFileMax is LoadFile with another bound on the file's size.
func LoadFileMax(path string, max int64) (Config, error) {
	data, err := ReadFileMax(path, max)
	if err != nil {
		return Config{}, err
	}
	return Parse(path, data)
}

// ReadFileMax reads a config or dataset file: a regular file (or a named
// pipe, such as <(...)) of at most max bytes, whatever size it claims.
// Errors are *Error naming the file and, for one too large, the flag that
// raises the bound.
func ReadFileMax(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read it: %v", unwrapPath(err))}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read it: %v", unwrapPath(err))}
	}
	if fi.IsDir() || !fi.Mode().IsRegular() && fi.Mode()&fs.ModeNamedPipe == 0 {
		return nil, &Error{File: path, Msg: "not a regular file"}
	}
	tooBig := &Error{File: path, Msg: fmt.Sprintf("over the %s a config or dataset file may have; --max-file-size raises the bound", sizeString(max))}
	if fi.Size() > max {
		tooBig.Msg = fmt.Sprintf("%s, over the %s a config or dataset file may have; --max-file-size raises the bound", sizeString(fi.Size()), sizeString(max))
		return nil, tooBig
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read it: %v", unwrapPath(err))}
	}
	if int64(len(data)) > max {
		return nil, tooBig
	}
	return data, nil
}

// sizeString writes a byte count in the largest binary unit that keeps it
// whole or readable: 16 MiB, 1.5 GiB, 512 bytes.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(math.Round(float64(n)/(1<<30)*10)/10, 'f', -1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(math.Round(float64(n)/(1<<20)*10)/10, 'f', -1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(math.Round(float64(n)/(1<<10)*10)/10, 'f', -1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Parse decodes and validates a TOML config; name is used in messages. A
// document that sets nothing gives the defaults, and Empty says so.
func Parse(name string, data []byte) (Config, error) {
	table, idx, err := ParseTOML(name, data)
	if err != nil {
		return Config{}, err
	}
	cfg, err := DecodeTable(name, table, idx.Line, "")
	cfg.empty = len(table) == 0
	return cfg, err
}

// utf8BOM is the byte order mark some editors put at the start of a UTF-8
// file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// checkText strips a UTF-8 byte order mark and refuses text that is not
// UTF-8 (UTF-16 named as such), with the line of the first bad byte.
func checkText(name string, data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) ||
		(len(data) >= 2 && (data[0] == 0 || data[1] == 0)) {
		return nil, &Error{File: name, Msg: "not UTF-8: the file looks like UTF-16; save it as UTF-8"}
	}
	if !utf8.Valid(data) {
		bad := 0
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				bad = i
				break
			}
			i += size
		}
		return nil, &Error{File: name, Line: 1 + bytes.Count(data[:bad], []byte{'\n'}), Msg: fmt.Sprintf("not UTF-8: invalid byte 0x%02x; save the file as UTF-8", data[bad])}
	}
	return data, nil
}

// ParseTOML decodes a TOML document into a table and an index of its key
// lines. A syntax error is an *Error with the line. A UTF-8 byte order
// mark is accepted; text in another encoding is an error saying so.
func ParseTOML(name string, data []byte) (map[string]any, tomlpos.Index, error) {
	data, err := checkText(name, data)
	if err != nil {
		return nil, nil, err
	}
	var table map[string]any
	if err := toml.Unmarshal(data, &table); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, nil, &Error{File: name, Line: line, Msg: fmt.Sprintf("TOML syntax error at column %d: %s", col, de.Error())}
		}
		return nil, nil, &Error{File: name, Msg: fmt.Sprintf("TOML syntax error: %v", err)}
	}
	idx := tomlpos.Build(data)
	var errs errorList
	nonFinite(table, "", func(path string, x float64) {
		errs.add(&Error{File: name, Line: idx.Line(path), Key: path,
			Msg: fmt.Sprintf("want a finite number, got %s: no option takes nan or an infinity", tomlFloat(x))})
	})
	if err := errs.err(); err != nil {
		return nil, nil, err
	}
	return table, idx, nil
}

// tomlFloat spells NaN and the infinities as TOML does.
func tomlFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// nonFinite calls bad with the path of each NaN or infinity in v, a
// decoded TOML value at path: TOML writes them nan and inf, and every
// number pikit reads from a file (temperature, top_p, a threshold, a sink
// argument) must be finite.
func nonFinite(v any, path string, bad func(path string, x float64)) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			bad(path, x)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			nonFinite(x[k], join(path, k), bad)
		}
	case []any:
		for i, e := range x {
			nonFinite(e, join(path, strconv.Itoa(i)), bad)
		}
	case []map[string]any:
		for i, e := range x {
			nonFinite(e, join(path, strconv.Itoa(i)), bad)
		}
	}
}

// DecodeTable builds and validates a config from a decoded TOML table.
// lines maps a dotted key path to its line (nil when unknown); prefix is the
// table's own path in the document ("" for the top level, "cases.3" for a
// dataset case). skip names keys the caller handles itself (a case's id and
// description).
func DecodeTable(file string, table map[string]any, lines func(path string) int, prefix string, skip ...string) (Config, error) {
	return DecodeTableIn(file, table, lines, prefix, nil, nil, skip...)
}

// DecodeTableIn is DecodeTable for a table whose agents may name the
// declarative scenarios of its file (a dataset case): scs, with their
// ScenarioDigests.
func DecodeTableIn(file string, table map[string]any, lines func(path string) int, prefix string, scs map[string]*agent.Scenario, digests map[string]string, skip ...string) (Config, error) {
	d := &decoder{file: file, lines: lines, cfg: NewConfig(), paths: map[string]string{}}
	d.cfg.Source = file
	if len(scs) > 0 {
		d.cfg.SetScenarios(scs, digests)
	}
	skipped := map[string]bool{}
	for _, k := range skip {
		skipped[k] = true
	}
	top := map[string]any{}
	for _, k := range sortedKeys(table) {
		switch {
		case skipped[k]:
		case k == "matrix" || k == "judge":
			if _, ok := table[k].(map[string]any); !ok {
				d.errorf(join(prefix, k), "want a table ([%s]), got %s", k, method.Describe(table[k]))
			}
		case k == "scenarios":
			scs, raw, err := ParseScenarios(file, table[k], lines, join(prefix, k))
			if err != nil {
				d.errs = append(d.errs, err)
				continue
			}
			d.cfg.SetScenarios(scs, ScenarioDigests(raw))
			d.paths[k] = join(prefix, k)
		case slices.Contains(SectionNames, k):
			m, ok := table[k].(map[string]any)
			if !ok {
				d.errorf(join(prefix, k), "want a table ([%s]), got %s", k, method.Describe(table[k]))
				continue
			}
			if d.cfg.Sections == nil {
				d.cfg.Sections = map[string]map[string]any{}
			}
			d.cfg.Sections[k] = m
			d.paths[k] = join(prefix, k)
		case k == "target":
			if _, ok := table[k].(map[string]any); !ok {
				d.errorf(join(prefix, k), "want a table ([target] with spec = \"...\"), got %s; use target_spec for a spec string", method.Describe(table[k]))
			}
		default:
			top[k] = table[k]
		}
	}
	d.flat(prefix, top, nil)
	if m, ok := table["matrix"].(map[string]any); ok && !skipped["matrix"] {
		for k := range m {
			if _, dup := top[k]; dup {
				d.errorf(join(prefix, "matrix."+k), "set both at the top level and in [matrix]; keep one")
			}
		}
		d.flat(join(prefix, "matrix"), m, nil)
	}
	if j, ok := table["judge"].(map[string]any); ok && !skipped["judge"] {
		d.judge(join(prefix, "judge"), j)
	}
	if t, ok := table["target"].(map[string]any); ok && !skipped["target"] {
		d.target(join(prefix, "target"), t)
	}
	if len(d.errs) > 0 {
		return Config{}, d.errs.err()
	}
	d.cfg.lines = func(key string) int { return d.line(key) }
	if err := d.cfg.Validate(); err != nil {
		return Config{}, err
	}
	return d.cfg, nil
}

type decoder struct {
	file  string
	lines func(string) int
	cfg   Config
	paths map[string]string // config key → its path in the document
	errs  errorList
}

// line returns the line of a config key ("attacks", or "attacks.2" for an
// element).
func (d *decoder) line(key string) int {
	if d.lines == nil {
		return 0
	}
	if p, ok := d.paths[key]; ok { // a [target] option, stored whole
		return d.lines(p)
	}
	head, rest, _ := strings.Cut(key, ".")
	if p, ok := d.paths[head]; ok {
		if rest != "" {
			p += "." + rest
		}
		return d.lines(p)
	}
	return 0
}

// pathLine returns the line of a document path, 0 when unknown.
func (d *decoder) pathLine(path string) int {
	if d.lines == nil {
		return 0
	}
	return d.lines(path)
}

func (d *decoder) errorf(path, format string, args ...any) {
	line := d.pathLine(path)
	key := path
	if i := strings.Index(key, "cases."); i == 0 {
		// "cases.3.attacks" → "attacks": the case is named by the caller.
		parts := strings.SplitN(key, ".", 3)
		if len(parts) == 3 {
			key = parts[2]
		}
	}
	d.errs.add(&Error{File: d.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// flat decodes config keys. rename maps a document key to the config key
// it sets ([judge] type is judge_type).
func (d *decoder) flat(prefix string, m map[string]any, rename map[string]string) {
	for _, doc := range sortedKeys(m) {
		path := join(prefix, doc)
		v := m[doc]
		k := doc
		if r, ok := rename[doc]; ok {
			k = r
		}
		field := k
		switch k {
		case "attack", "defense", "channel", "agent":
			field = k + "s"
		case "marker":
			field = "canary"
		case "utility_canary":
			field = "expected"
		case "data_file":
			field = "carrier_path"
		}
		if prev, dup := d.paths[field]; dup {
			d.errorf(path, "the same setting as %s (line %d); keep one", prev, d.pathLine(prev))
			continue
		}
		d.paths[field] = path
		switch k {
		case "attacks", "attack":
			d.cfg.Attacks, d.cfg.attacksSet = d.strings(path, v), true
		case "defenses", "defense":
			d.cfg.Defenses, d.cfg.defensesSet = d.strings(path, v), true
		case "channels", "channel":
			d.cfg.Channels, d.cfg.channelsSet = d.strings(path, v), true
		case "agents", "agent":
			d.cfg.Agents = d.strings(path, v)
		case "attack_specs":
			d.cfg.AttackSpecs = d.specs(path, v)
		case "defense_specs":
			d.cfg.DefenseSpecs = d.specs(path, v)
		case "channel_specs":
			d.cfg.ChannelSpecs = d.specs(path, v)
		case "task":
			d.cfg.Task = d.string(path, v)
		case "canary", "marker":
			d.cfg.Canary = d.string(path, v)
		case "canary_fuzzy":
			d.cfg.CanaryFuzzy = d.int(path, v)
		case "canary_regex":
			d.cfg.CanaryRegex = d.string(path, v)
		case "judge_criteria":
			d.cfg.JudgeCriteria = d.string(path, v)
		case "require_sink":
			d.cfg.RequireSink = d.bool(path, v)
		case "sink_args":
			d.cfg.SinkArgs = d.table(path, v)
		case "target_spec":
			d.cfg.TargetSpec = d.string(path, v)
		case "attacker_target":
			d.cfg.AttackerTarget = d.string(path, v)
		case "judge_type":
			d.cfg.JudgeType = d.string(path, v)
		case "user_message":
			d.cfg.UserMessage = d.string(path, v)
		case "payload_marker":
			d.cfg.PayloadMarker = d.string(path, v)
		case "data_sample":
			d.cfg.DataSample = d.string(path, v)
		case "max_steps":
			d.cfg.MaxSteps = d.int(path, v)
		case "tool_protocol":
			d.cfg.ToolProtocol = d.string(path, v)
		case "reruns_without_answer":
			d.cfg.Reruns = d.int(path, v)
		case "prefetch":
			d.cfg.Prefetch = d.bool(path, v)
		case "carrier_mode":
			d.cfg.CarrierMode = d.string(path, v)
		case "temperature":
			d.cfg.Temperature = d.float(path, v)
		case "repeats":
			d.cfg.Repeats = d.int(path, v)
		case "target_options":
			d.targetOptions(path, d.table(path, v))
		case "labels":
			d.labels(path, d.table(path, v))
		case "seed":
			d.cfg.Seed, d.cfg.SeedSet = int64(d.int(path, v)), true
		case "expected", "utility_canary":
			d.cfg.Expected = d.string(path, v)
		case "benchmark":
			d.cfg.Benchmark = d.string(path, v)
		case "defense_point":
			d.cfg.DefensePoint = d.string(path, v)
		case "carrier_path", "data_file":
			d.carrierPath(path, d.string(path, v))
		case "output_path":
			d.outputPath(path, d.string(path, v))
		case "runtime":
			d.cfg.Runtime = d.string(path, v)
		case "runtime_options":
			d.cfg.RuntimeOptions = d.table(path, v)
		case "fixture":
			d.cfg.Fixture = d.string(path, v)
		default:
			delete(d.paths, field)
			d.errorf(path, "unknown key%s; valid keys: %s", suggest.Hint(k, flatKeys), strings.Join(flatKeys, ", "))
		}
	}
}

// judge decodes the [judge] section: a subset of the config keys, with
// type for judge_type.
func (d *decoder) judge(prefix string, m map[string]any) {
	known := map[string]any{}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(judgeKeys, k) {
			d.errorf(join(prefix, k), "unknown key in [judge]%s; valid keys: %s", suggest.Hint(k, judgeKeys), strings.Join(judgeKeys, ", "))
			continue
		}
		known[k] = m[k]
	}
	d.flat(prefix, known, map[string]string{"type": "judge_type"})
}

func (d *decoder) target(prefix string, m map[string]any) {
	opts := map[string]any{}
	for _, k := range sortedKeys(m) {
		path := join(prefix, k)
		if k == "spec" {
			if _, dup := d.paths["target_spec"]; dup {
				d.errorf(path, "target spec also set as target_spec; keep one")
				continue
			}
			d.paths["target_spec"] = path
			d.cfg.TargetSpec = d.string(path, m[k])
			continue
		}
		opts[k] = m[k]
		d.paths["target_options."+k] = path
	}
	d.targetOptions(prefix, opts)
}

// secretOption reports whether a target option's name says it holds a
// credential. The name is matched whole (case and the separators -, . and
// _ aside), never by a part of it: api_key, token, access_token, password
// and the like are credentials, and so is a name that ends in one of the
// unambiguous ones (openai_api_key, client_secret); max_tokens,
// max_output_tokens and token_budget are counts, and keyboard is a word.
func secretOption(name string) bool {
	n := strings.Map(func(r rune) rune {
		if r == '-' || r == '.' {
			return '_'
		}
		return unicode.ToLower(r)
	}, name)
	if secretNames[n] {
		return true
	}
	for _, suffix := range secretSuffixes {
		if strings.HasSuffix(n, "_"+suffix) {
			return true
		}
	}
	return false
}

// secretNames are option names that hold a credential.
var secretNames = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "x_api_key": true,
	"token": true, "auth_token": true, "access_token": true, "bearer_token": true, "id_token": true, "refresh_token": true,
	"auth": true, "authorization": true, "bearer": true, "credential": true, "credentials": true,
	"secret": true, "client_secret": true, "secret_key": true, "password": true, "passwd": true,
}

// secretSuffixes end option names that hold a credential whatever comes
// before them (openai_api_key, openai_key, azure_client_secret); not
// "tokens", nor "token" alone, which count things (max_token).
var secretSuffixes = []string{"key", "apikey", "secret", "password", "access_token", "auth_token", "bearer_token"}

// targetOptions adds provider options, refusing secrets: keys belong in the
// environment, never in a file that gets committed.
func (d *decoder) targetOptions(prefix string, opts map[string]any) {
	for _, k := range sortedKeys(opts) {
		if secretOption(k) {
			d.errorf(join(prefix, k), "API keys do not belong in a config file; set the provider's environment variable (e.g. OPENAI_API_KEY or ANTHROPIC_API_KEY) or put it in a .env file")
			continue
		}
		if d.cfg.TargetOpts == nil {
			d.cfg.TargetOpts = map[string]any{}
		}
		d.cfg.TargetOpts[k] = opts[k]
	}
}

func (d *decoder) string(path string, v any) string {
	s, ok := v.(string)
	if !ok {
		d.errorf(path, "want a string, got %s", method.Describe(v))
	}
	return s
}

func (d *decoder) strings(path string, v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				d.errorf(fmt.Sprintf("%s.%d", path, i), "want a list of strings; element %d is %s", i, method.Describe(e))
				continue
			}
			out = append(out, s)
		}
		return out
	}
	d.errorf(path, "want a list of strings (or one string), got %s", method.Describe(v))
	return nil
}

func (d *decoder) bool(path string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		d.errorf(path, "want true or false, got %s", method.Describe(v))
	}
	return b
}

func (d *decoder) int(path string, v any) int {
	switch n := v.(type) {
	case int64:
		return int(n)
	case float64:
		// A float past 2^53 is no whole number anyone meant, and past
		// int64 its conversion is undefined.
		if n == math.Trunc(n) && math.Abs(n) <= 1<<53 {
			return int(n)
		}
	}
	d.errorf(path, "want an integer, got %s", method.Describe(v))
	return 0
}

func (d *decoder) float(path string, v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	d.errorf(path, "want a number, got %s", method.Describe(v))
	return 0
}

func (d *decoder) table(path string, v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		d.errorf(path, "want a table (e.g. { to = \"attacker@example.com\" }), got %s", method.Describe(v))
	}
	return m
}

func (d *decoder) specs(path string, v any) []Spec {
	var items []any
	switch x := v.(type) {
	case []any:
		items = x
	case map[string]any:
		items = []any{x}
	default:
		d.errorf(path, "want a list of tables like { name = \"...\", kwargs = { ... } }, got %s", method.Describe(v))
		return nil
	}
	var out []Spec
	for i, it := range items {
		ipath := fmt.Sprintf("%s.%d", path, i)
		m, ok := it.(map[string]any)
		if !ok {
			d.errorf(ipath, "want a table like { name = \"...\", kwargs = { ... } }, got %s", method.Describe(it))
			continue
		}
		var s Spec
		for _, k := range sortedKeys(m) {
			switch k {
			case "name":
				s.Name = d.string(ipath+".name", m[k])
			case "kwargs":
				s.Kwargs = d.table(ipath+".kwargs", m[k])
			default:
				d.errorf(ipath+"."+k, "unknown key in a method spec%s; valid keys: name, kwargs", suggest.Hint(k, []string{"name", "kwargs"}))
			}
		}
		if s.Name == "" {
			d.errorf(ipath, "method spec without a name")
			continue
		}
		out = append(out, s)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// MaxCarrierBytes bounds a carrier file a config names.
const MaxCarrierBytes = 8 << 20

// localPath resolves the path a config key names (want says what it
// should be, for the error when it is empty): relative to the config's
// directory. A path that leaves that directory, lexically or through a
// symbolic link anywhere along it, is recorded, for --trust-config; rel is
// then "". Otherwise rel is the path inside the directory once links are
// resolved, and root the directory itself, resolved.
func (d *decoder) localPath(key, path, p, want string) (abs, root, rel string, ok bool) {
	if p == "" {
		d.errorf(path, "want the path of %s", want)
		return "", "", "", false
	}
	base := "."
	if d.file != "" {
		base = filepath.Dir(d.file)
	}
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(base, p)
	}
	root, rel, inside := within(base, abs)
	if !inside || filepath.IsAbs(p) {
		d.cfg.outsidePaths = append(d.cfg.outsidePaths, key)
		return abs, "", "", true
	}
	return abs, root, rel, true
}

// outside records that the file key names counts as outside the config's
// directory although its path is inside, and why.
func (d *decoder) outside(key, why string) {
	d.cfg.outsidePaths = append(d.cfg.outsidePaths, key)
	if d.cfg.outsideWhy == nil {
		d.cfg.outsideWhy = map[string]string{}
	}
	d.cfg.outsideWhy[key] = why
}

// within reports whether abs stays inside the directory base once every
// symbolic link in both is resolved, and returns base resolved and abs's
// path relative to it. A path that does not exist yet (a file to write) is
// judged by its directory, which must exist; anything that cannot be
// resolved is outside.
func within(base, abs string) (root, rel string, ok bool) {
	root, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", "", false
	}
	if root, err = filepath.Abs(root); err != nil {
		return "", "", false
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		// Not there (or a link to nothing): its directory decides, and
		// the name itself is checked when it is opened.
		dir, derr := filepath.EvalSymlinks(filepath.Dir(abs))
		if derr != nil {
			return "", "", false
		}
		real, err = filepath.Join(dir, filepath.Base(abs)), nil
	}
	if err != nil {
		return "", "", false
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", "", false
	}
	rel, err = filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", "", false
	}
	return root, rel, true
}

// openIn opens a file for reading: inside root through os.Root, which
// refuses any path (a link swapped in since it was checked included) that
// leaves it; else, for a path the user trusts the file to name, as it is.
func openIn(abs, root, rel string) (*os.File, error) {
	if root == "" {
		return os.Open(abs)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(rel)
}

// carrierPath reads the user's own carrier file.
func (d *decoder) carrierPath(path, p string) {
	abs, root, rel, ok := d.localPath("carrier_path", path, p, "a file to taint")
	if !ok {
		return
	}
	f, err := openIn(abs, root, rel)
	if err != nil {
		d.errorf(path, "cannot read the carrier %s: %v", p, unwrapPath(err))
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		d.errorf(path, "cannot read the carrier %s: %v", p, unwrapPath(err))
		return
	case !fi.Mode().IsRegular():
		d.errorf(path, "the carrier %s is not a regular file", p)
		return
	case fi.Size() > MaxCarrierBytes:
		d.errorf(path, "the carrier %s has %d bytes, over the %d a carrier may have", p, fi.Size(), MaxCarrierBytes)
		return
	}
	if n, ok := safefile.Links(fi); ok && n > 1 && root != "" {
		d.outside("carrier_path", fmt.Sprintf("%s has %d names (a hard link), so its text may be a file's from outside the config's directory", p, n))
	}
	// The size a file reports is not a bound (/proc files say 0): read
	// one byte past the limit to know.
	b, err := io.ReadAll(io.LimitReader(f, MaxCarrierBytes+1))
	switch {
	case err != nil:
		d.errorf(path, "cannot read the carrier %s: %v", p, unwrapPath(err))
		return
	case len(b) > MaxCarrierBytes:
		d.errorf(path, "the carrier %s has over the %d bytes a carrier may have", p, MaxCarrierBytes)
		return
	case strings.EqualFold(filepath.Ext(p), ".pdf"):
		text, err := pdfText(b)
		if err != nil {
			d.errorf(path, "cannot read the text of the PDF carrier %s (%v): pikit reads simple PDFs (text shown with Tj/TJ, plain or Flate streams); export the text (pdftotext) and name that file", p, err)
			return
		}
		d.cfg.CarrierPath, d.cfg.CarrierData = abs, text
		return
	case !utf8.Valid(b):
		d.errorf(path, "the carrier %s is not UTF-8 text", p)
		return
	}
	d.cfg.CarrierPath, d.cfg.CarrierData = abs, string(bytes.TrimPrefix(b, utf8BOM))
}

// unwrapPath drops the path an *fs.PathError repeats (the message names
// the file already).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// outputPath checks where the tainted carrier goes: never over a file
// that exists (a symbolic link counts, dangling or not).
func (d *decoder) outputPath(path, p string) {
	abs, root, rel, ok := d.localPath("output_path", path, p, "the file to write")
	if !ok {
		return
	}
	if _, err := os.Lstat(abs); err == nil {
		d.errorf(path, "%s exists; pikit never overwrites a file a config names: remove it or name another", p)
		return
	}
	if fi, err := os.Stat(filepath.Dir(abs)); err != nil || !fi.IsDir() {
		d.errorf(path, "the directory of %s does not exist", p)
		return
	}
	d.cfg.OutputPath, d.cfg.outputRoot, d.cfg.outputRel = abs, root, rel
}

// pdfText extracts the metadata and page text of a PDF carrier, as a
// document tool would hand it to a model.
func pdfText(b []byte) (text string, err error) {
	defer func() {
		if p := recover(); p != nil { // a malformed PDF is an error, never a crash
			text, err = "", fmt.Errorf("malformed PDF: %v", p)
		}
	}()
	text, err = channel.PDFText(b)
	if err == nil && strings.TrimSpace(text) == "" {
		err = errors.New("no text found")
	}
	return text, err
}

// labelNameRe is what a label's name may be: it is written after
// "label:" on a command line.
var labelNameRe = lazy.Regexp(`^[A-Za-z0-9_.-]{1,64}$`)

// labels decodes a case's labels: names of letters, digits, _ - and .,
// values strings (numbers and booleans are written as text).
func (d *decoder) labels(path string, m map[string]any) {
	if m == nil {
		return
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if !labelNameRe().MatchString(k) {
			d.errorf(join(path, k), "a label's name is 1 to 64 letters, digits, _, - or .")
			continue
		}
		switch v := m[k].(type) {
		case string:
			out[k] = v
		case int64, float64, bool:
			out[k] = fmt.Sprint(v)
		default:
			d.errorf(join(path, k), "want a string, got %s", method.Describe(v))
		}
	}
	d.cfg.Labels = out
}
