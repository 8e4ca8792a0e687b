// Package dataset loads benchmark datasets: TOML files whose [[cases]] are
// experiment configs, each with an id and a description. A dataset runs
// through the same matrix engine as a custom experiment. Eight datasets are
// built in (embedded in the binary, every data/*.toml): under the Python
// pikit's names, direct_injection, indirect_injection, agentdojo and
// injecagent hold its cases (the same ids and experiments, in pikit's
// words); pikit_direct, pikit_indirect, agentdojo_style and
// injecagent_style are pikit's own. Any file in the same format loads with
// LoadFile, including the Python pikit's.
//
// The package also writes the format, and is its one writer: File and its
// parts are the values of a file, and Encode writes them, escaping every
// control, bidi and invisible character (AppendQuoted) and reading the
// text back through Parse before a byte is written. pikit import (package
// importer) and pikit export-case (package dataset/exportcase) write
// through it.
package dataset

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

//go:embed data/*.toml
var builtin embed.FS

// ErrUnknown is wrapped by the error for a dataset name that is not built in.
var ErrUnknown = errors.New("unknown dataset")

// Case is one test case: an experiment config with an id and a description.
type Case struct {
	ID          string
	Description string
	Reference   string // where the case comes from (an imported benchmark's file and id)
	Config      matrix.Config
}

// Dataset is a loaded benchmark.
type Dataset struct {
	Name        string
	Description string
	Reference   string
	Cases       []Case
	Path        string // the file it came from ("builtin/NAME.toml" for built-ins)
}

var metaKeys = []string{"name", "description", "reference"}

// SearchEnv names the environment variable with more directories a
// dataset is found in by name, as the Python pikit documents it: a path
// list (":"-separated on Unix).
const SearchEnv = "PIKIT_DATASETS"

// searchDirs are the directories a dataset name is looked up in, first
// to last: each of $PIKIT_DATASETS, then ./datasets.
func searchDirs() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv(SearchEnv)) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return append(dirs, "datasets")
}

// findFile returns the file NAME.toml of the first search directory that
// has one.
func findFile(name string) (string, bool) {
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return "", false
	}
	for _, d := range searchDirs() {
		f := filepath.Join(d, name+".toml")
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			return f, true
		}
	}
	return "", false
}

// List returns the names of the datasets found by name, sorted: the
// built-in ones and those in the search directories ($PIKIT_DATASETS,
// ./datasets).
func List() []string {
	var names []string
	if entries, err := builtin.ReadDir("data"); err == nil {
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok {
				names = append(names, n)
			}
		}
	}
	for _, d := range searchDirs() {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok && e.Type().IsRegular() {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// Load loads a dataset by name: NAME.toml of the first search directory
// that has one ($PIKIT_DATASETS, then ./datasets), else the built-in one.
// An unknown name is an error wrapping ErrUnknown that lists the known
// names.
func Load(name string) (*Dataset, error) {
	if f, ok := findFile(name); ok {
		return LoadFile(f)
	}
	data, err := builtin.ReadFile(path.Join("data", name+".toml"))
	if err != nil || strings.ContainsAny(name, "/\\") {
		known := List()
		return nil, fmt.Errorf("%w %q%s; datasets: %s (built in, or NAME.toml in $%s or ./datasets)", ErrUnknown, name, suggest.Hint(name, known), strings.Join(known, ", "), SearchEnv)
	}
	return Parse("builtin/"+name+".toml", data)
}

// Source returns the TOML text of a dataset found by name, as its file
// holds it (for tools that copy part of it, such as its [scenarios]
// tables).
func Source(name string) ([]byte, error) {
	if _, err := Load(name); err != nil {
		return nil, err
	}
	if f, ok := findFile(name); ok {
		return matrix.ReadFileMax(f, matrix.DefaultMaxFileBytes)
	}
	return builtin.ReadFile(path.Join("data", name+".toml"))
}

// LoadFile loads a dataset file of at most matrix.DefaultMaxFileBytes.
func LoadFile(file string) (*Dataset, error) {
	return LoadFileMax(file, matrix.DefaultMaxFileBytes)
}

// LoadFileMax loads a dataset file, refusing one over max bytes (or that
// is not a regular file) before parsing it.
func LoadFileMax(file string, max int64) (*Dataset, error) {
	data, err := matrix.ReadFileMax(file, max)
	if err != nil {
		return nil, err
	}
	return Parse(file, data)
}

// LoadAny loads a dataset file when ref looks like a path (ends in .toml or
// contains a path separator), a built-in dataset otherwise.
func LoadAny(ref string) (*Dataset, error) {
	return LoadAnyMax(ref, matrix.DefaultMaxFileBytes)
}

// LoadAnyMax is LoadAny with a bound on the size of a dataset file.
func LoadAnyMax(ref string, max int64) (*Dataset, error) {
	if IsFile(ref) {
		return LoadFileMax(ref, max)
	}
	return Load(ref)
}

// IsFile reports whether a dataset reference names a file rather than a
// built-in.
func IsFile(ref string) bool {
	return strings.HasSuffix(ref, ".toml") || strings.ContainsAny(ref, `/\`)
}

// Parse decodes and validates a dataset; file names it in messages.
func Parse(file string, data []byte) (*Dataset, error) {
	table, idx, err := matrix.ParseTOML(file, data)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Path: file}
	var errs []error
	bad := func(p, format string, args ...any) {
		errs = append(errs, &matrix.Error{File: file, Line: idx.Line(p), Key: p, Msg: fmt.Sprintf(format, args...)})
	}
	badCase := func(id, p, key, format string, args ...any) {
		errs = append(errs, &matrix.Error{File: file, Line: idx.Line(p + "." + key), Case: id, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, k := range sortedKeys(table) {
		if k != "meta" && k != "cases" && k != "scenarios" {
			bad(k, "unknown top-level key%s; a dataset has [meta], [scenarios.NAME] and [[cases]]", suggest.Hint(k, []string{"meta", "cases", "scenarios"}))
		}
	}
	var scenarios map[string]*agent.Scenario
	var digests map[string]string
	if v, present := table["scenarios"]; present {
		scs, raw, err := matrix.ParseScenarios(file, v, idx.Line, "scenarios")
		if err != nil {
			// Cases naming a broken scenario would only add "unknown
			// agent" to what is said here.
			return nil, matrix.JoinErrors(append(errs, err))
		}
		scenarios, digests = scs, matrix.ScenarioDigests(raw)
	}
	if meta, ok := table["meta"].(map[string]any); ok {
		for _, k := range sortedKeys(meta) {
			s, isString := meta[k].(string)
			switch {
			case !slices.Contains(metaKeys, k):
				bad("meta."+k, "unknown key in [meta]%s; valid keys: %s", suggest.Hint(k, metaKeys), strings.Join(metaKeys, ", "))
			case !isString:
				bad("meta."+k, "want a string")
			case k == "name":
				ds.Name = s
			case k == "description":
				ds.Description = s
			case k == "reference":
				ds.Reference = s
			}
		}
	} else if _, present := table["meta"]; present {
		bad("meta", "want a table ([meta])")
	}
	if ds.Name == "" {
		ds.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	rawCases, ok := table["cases"].([]map[string]any)
	if !ok {
		if list, isList := table["cases"].([]any); isList {
			for _, c := range list {
				m, isTable := c.(map[string]any)
				if !isTable {
					bad("cases", "want an array of tables ([[cases]])")
					break
				}
				rawCases = append(rawCases, m)
			}
		} else if _, present := table["cases"]; present {
			bad("cases", "want an array of tables ([[cases]])")
		}
	}
	if len(rawCases) == 0 && len(errs) == 0 {
		bad("cases", "the dataset has no cases; add [[cases]] tables")
	}
	seen := map[string]string{}
	for i, raw := range rawCases {
		prefix := fmt.Sprintf("cases.%d", i)
		c := Case{ID: fmt.Sprintf("case-%03d", i+1)}
		if v, present := raw["id"]; present {
			if s, isString := v.(string); isString && s != "" {
				c.ID = s
			} else {
				badCase(c.ID, prefix, "id", "want a non-empty string")
			}
		}
		if v, present := raw["description"]; present {
			if s, isString := v.(string); isString {
				c.Description = s
			} else {
				badCase(c.ID, prefix, "description", "want a string")
			}
		}
		if v, present := raw["reference"]; present {
			if s, isString := v.(string); isString {
				c.Reference = s
			} else {
				badCase(c.ID, prefix, "reference", "want a string: where the case comes from")
			}
		}
		if first, dup := seen[c.ID]; dup {
			badCase(c.ID, prefix, "id", "duplicate case id %q (first used at %s)", c.ID, first)
		} else {
			seen[c.ID] = fmt.Sprintf("line %d", idx.Line(prefix+".id"))
		}
		cfg, err := matrix.DecodeTableIn(file, raw, func(p string) int { return idx.Line(prefix + "." + p) }, "", scenarios, digests, "id", "description", "reference")
		if err != nil {
			errs = append(errs, matrix.WithCase(err, c.ID))
			continue
		}
		cfg.CaseID, cfg.CaseDescription = c.ID, c.Description
		c.Config = cfg
		ds.Cases = append(ds.Cases, c)
	}
	if len(errs) > 0 {
		return nil, matrix.JoinErrors(errs)
	}
	return ds, nil
}

// Options override what every case says. Zero values keep each case's own.
type Options struct {
	Target      string   // target spec for every case
	Judge       string   // rule, llm or none
	Temperature *float64 // sampling temperature
	Repeats     int      // repeats per cell
	Attacks     []string // replaces every case's attacks
	Concurrency int      // workers (0: matrix.DefaultConcurrency)
	// Progress, when set, is called after each cell with done and total.
	Progress func(done, total int)
	// Prepare, when set, adjusts each case's config after the options
	// above and before it is planned (pikit proxy marks it driven and
	// checks its [proxy] rules); an error is the case's.
	Prepare func(cfg *matrix.Config) error
}

// Plan applies the options to every case and expands the cases into cells,
// case by case. For large plans, Expand computes cells on demand instead.
func Plan(ds *Dataset, opts Options) ([]matrix.Cell, error) {
	src, err := Expand(ds, opts)
	if err != nil {
		return nil, err
	}
	cells := make([]matrix.Cell, src.Len())
	for i := range cells {
		cells[i] = src.Cell(i)
	}
	return cells, nil
}

// Expand applies the options to every case and returns the dataset's cells
// as a source computed on demand: case by case, plan order inside a case.
// Its size is known at once (matrix.CountPlan counts it from the axes),
// however many repeats are asked for.
func Expand(ds *Dataset, opts Options) (matrix.Source, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	var parts []matrix.Source
	var errs []error
	total := 0
	for _, c := range ds.Cases {
		cfg := c.Config
		if opts.Target != "" {
			cfg.TargetSpec = opts.Target
		}
		if opts.Judge != "" {
			cfg.JudgeType = opts.Judge
		}
		if opts.Temperature != nil {
			cfg.Temperature = *opts.Temperature
		}
		if opts.Repeats > 0 {
			cfg.Repeats = opts.Repeats
		}
		if len(opts.Attacks) > 0 {
			cfg.SetAttacks(opts.Attacks)
		}
		if opts.Prepare != nil {
			if err := opts.Prepare(&cfg); err != nil {
				errs = append(errs, matrix.WithCase(err, c.ID))
				continue
			}
		}
		g, err := matrix.Expand(cfg)
		if err != nil {
			errs = append(errs, matrix.WithCase(err, c.ID))
			continue
		}
		if g.Len() > matrix.MaxPlanCells-total {
			errs = append(errs, matrix.WithCase(&matrix.Error{File: ds.Path, Msg: fmt.Sprintf("the dataset plans more than %d cells; lower repeats", matrix.MaxPlanCells)}, c.ID))
			break
		}
		total += g.Len()
		parts = append(parts, g)
	}
	if len(errs) > 0 {
		return nil, matrix.JoinErrors(errs)
	}
	return matrix.Concat(parts...), nil
}

// check validates the overrides once, so a bad one is one error rather
// than one per case.
func (o Options) check() error {
	if o.Target != "" {
		if _, _, err := target.ParseSpec(o.Target); err != nil {
			return fmt.Errorf("target override: %w", err)
		}
	}
	if t := o.Temperature; t != nil && !(*t >= 0 && *t <= 2) { // NaN fails both
		return fmt.Errorf("temperature override: %w", &matrix.Error{Msg: fmt.Sprintf("want a number from 0 to 2, got %v", *t)})
	}
	switch o.Judge {
	case "", "rule", "rule:pikit", "match", "llm", "none":
	default:
		return fmt.Errorf("judge override: %w", &matrix.Error{Msg: fmt.Sprintf("unknown judge %q; known: rule, rule:pikit, match, llm, none", o.Judge)})
	}
	for _, a := range o.Attacks {
		if err := attack.Registry.Check(a); err != nil {
			return fmt.Errorf("attacks override: %w", err)
		}
	}
	return nil
}

// Run loads a built-in dataset (or a file, for a path) and runs it.
func Run(ctx context.Context, name string, opts Options) ([]matrix.Result, error) {
	ds, err := LoadAny(name)
	if err != nil {
		return nil, err
	}
	return RunDataset(ctx, ds, opts)
}

// RunDataset runs every case through the matrix engine and returns the
// results in dataset order: case by case, plan order inside a case, each
// with its case id and description.
func RunDataset(ctx context.Context, ds *Dataset, opts Options) ([]matrix.Result, error) {
	cells, err := Plan(ds, opts)
	if err != nil {
		return nil, err
	}
	r := matrix.Runner{Concurrency: opts.Concurrency, Progress: opts.Progress}
	return r.RunAll(ctx, cells)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
