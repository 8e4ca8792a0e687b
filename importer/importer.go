// Package importer turns the field's prompt-injection benchmarks, from
// their own data files as their users download them, into pikit datasets:
// declarative scenarios (the benchmark's tools, as sources and sinks) and
// cases that keep the benchmark's ids and say where they came from. The
// datasets run with pikit dataset run like any other.
//
// Each benchmark's importer registers itself by name from the file that
// defines it; Write encodes what one produces as a dataset TOML file.
package importer

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/method"
)

// Func imports a benchmark's data, a file or a directory as the
// benchmark's users download them, with the options it was built with.
type Func func(path string) (*Dataset, error)

// Registry holds the importers by benchmark name ("injecagent",
// "agentdojo", ...), each with its options declared: pikit list importers
// shows them and pikit import --set KEY=VALUE gives them. Each importer
// registers itself from the file that defines it.
var Registry = method.NewRegistry[Func]("benchmark")

// Names returns the registered importers' names, sorted.
func Names() []string { return Registry.Names() }

// New returns the named importer with options given as KEY=VALUE texts
// (pikit import --set): an unknown benchmark or option, or a value that
// is not of its option's type, is an error naming it and the valid ones.
func New(name string, set []string) (Func, error) {
	info, ok := Registry.Lookup(name)
	if !ok {
		return nil, Registry.Check(name)
	}
	kwargs, err := method.FromStrings(Registry.Kind(), info, set)
	if err != nil {
		return nil, err
	}
	return Registry.New(name, kwargs, 0)
}

// selectionOptions are the options every importer of a large benchmark
// takes to keep part of it.
var selectionOptions = []method.Option{
	{Name: "limit", Default: 0, Help: "keep the first N cases (0: all)"},
	{Name: "sample", Default: 0, Help: "keep N cases drawn at random (with seed), in their order (0: all)"},
	{Name: "seed", Default: 0, Help: "the seed of sample"},
}

// selection reads selectionOptions.
func selection(a method.Args) (limit, sample int, seed uint64, err error) {
	limit, sample = a.Int("limit"), a.Int("sample")
	if limit < 0 || sample < 0 {
		return 0, 0, 0, fmt.Errorf("limit and sample are counts of cases: want 0 or more")
	}
	if a.Int("seed") < 0 {
		return 0, 0, 0, fmt.Errorf("seed: want a whole number, 0 or more")
	}
	return limit, sample, uint64(a.Int("seed")), nil
}

// Dataset is what an import produces.
type Dataset struct {
	// Benchmark is written into every case that names none (its results'
	// metadata then carries it, and reports add that benchmark's own
	// metrics); pikit import sets it to the importer's name.
	Benchmark string
	Meta      Meta
	Scenarios []Scenario // [scenarios.NAME]
	Cases     []Case     // [[cases]]
	// LeftOut are the benchmark's cases the importer could not map, each
	// an *Error naming its file, line and why: one odd case never aborts an
	// import. They are not written; pikit import reports them.
	LeftOut []*Error
}

// Meta is a dataset's [meta] table.
type Meta struct{ Name, Description, Reference string }

// Scenario is a declarative agent scenario: its tools and where the
// payload enters.
type Scenario struct {
	Name        string // unique in the dataset: letters, digits, _ - .
	Description string
	System      string
	UserMessage string
	// Channel is the default channel of cases that name none; "raw" is the
	// payload text as it is, with no carrier.
	Channel string
	Taint   Taint
	Tools   []Tool
}

// Taint says which source carries the payload, at which call and how.
type Taint struct {
	Tool string // the source tool whose result carries the payload
	Call int    // 0: every call; n: only the nth
	// Mode is "replace" (the default: the crafted text is the output),
	// "insert" (at Marker in the output) or "append".
	Mode   string
	Marker string // with insert; removed from the output of clean runs
	// Clean, with a marker, is the text the marker stands for in clean
	// runs instead (the tool's own text there, which a payload replaces).
	Clean string
	// Args are the arguments of the taint point's call that a prefetching
	// run makes before the model's first turn (the call a benchmark puts in
	// the history); nil for placeholders.
	Args map[string]any
	// Also are more places the same payload goes (insert mode): a marker
	// in a source tool's output, with the text it stands for in clean runs.
	Also []Spot
}

// Spot is one more place a scenario's payload goes.
type Spot struct{ Tool, Marker, Clean string }

// Tool is a declarative tool: a source (fixed output, a template, or data
// keyed by an argument) or a sink (records its calls, never acts).
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any // a JSON Schema object
	Sink        bool
	Output      string // a sink's confirmation, or a source's fixed output
	Template    string // a source's output with {arg} filled from the call
	ByArg       string // a source keyed by this argument: Data[value], else Output
	Data        map[string]string
}

// Case is one [[cases]] table.
type Case struct {
	ID          string
	Description string
	Reference   string // where the case comes from in the benchmark
	// Config holds the other keys, as a dataset file spells them
	// ("agents", "attacks", "task", "sink_args", ...).
	Config map[string]any
}

// Error is bad input: which file, where in it, and what was expected.
type Error struct {
	File  string
	Line  int    // 0 when unknown
	Field string // the field at fault ("case 3: Attacker Tools"), "" when none
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "%s: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// MaxFileBytes bounds a benchmark file an importer reads.
const MaxFileBytes = 64 << 20

// ReadFile reads a benchmark file, refusing one over MaxFileBytes or one
// that is not a regular file.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read it: %v", errUnwrap(err))}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: "not a regular file"}
	}
	if fi.Size() > MaxFileBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("%d bytes, over the %d a benchmark file may have", fi.Size(), MaxFileBytes)}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read it: %v", errUnwrap(err))}
	}
	return b, nil
}

func errUnwrap(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// Write encodes a dataset as a pikit dataset TOML file: [meta], then each
// scenario, then the cases, every table's keys in a fixed order.
func Write(w io.Writer, d *Dataset) error {
	e := &encoder{}
	e.table("meta")
	e.kv("name", d.Meta.Name)
	e.kv("description", d.Meta.Description)
	e.kv("reference", d.Meta.Reference)
	for _, sc := range d.Scenarios {
		if !nameRe().MatchString(sc.Name) {
			return fmt.Errorf("scenario %q: a name is letters, digits, _, - and .", sc.Name)
		}
		e.table("scenarios." + key(sc.Name))
		e.kv("description", sc.Description)
		e.kv("system", sc.System)
		e.kv("user_message", sc.UserMessage)
		e.kv("channel", sc.Channel)
		taint := map[string]any{"tool": sc.Taint.Tool}
		if sc.Taint.Call > 0 {
			taint["call"] = sc.Taint.Call
		}
		if sc.Taint.Mode != "" {
			taint["mode"] = sc.Taint.Mode
		}
		if sc.Taint.Marker != "" {
			taint["marker"] = sc.Taint.Marker
		}
		if sc.Taint.Clean != "" {
			taint["clean"] = sc.Taint.Clean
		}
		if sc.Taint.Args != nil {
			taint["args"] = sc.Taint.Args
		}
		if len(sc.Taint.Also) > 0 {
			also := make([]any, len(sc.Taint.Also))
			for i, sp := range sc.Taint.Also {
				m := map[string]any{"tool": sp.Tool, "marker": sp.Marker}
				if sp.Clean != "" {
					m["clean"] = sp.Clean
				}
				also[i] = m
			}
			taint["also"] = also
		}
		if sc.Taint.Tool != "" {
			e.kv("taint", taint)
		}
		for _, t := range sc.Tools {
			e.arrayTable("scenarios." + key(sc.Name) + ".tools")
			e.kv("name", t.Name)
			e.kv("description", t.Description)
			if t.Sink {
				e.kv("sink", true)
			}
			e.kv("parameters", t.Parameters)
			e.kv("output", t.Output)
			e.kv("template", t.Template)
			e.kv("by_arg", t.ByArg)
			if len(t.Data) > 0 {
				m := make(map[string]any, len(t.Data))
				for k, v := range t.Data {
					m[k] = v
				}
				e.kv("data", m)
			}
		}
	}
	for _, c := range d.Cases {
		e.arrayTable("cases")
		e.kv("id", c.ID)
		e.kv("description", c.Description)
		e.kv("reference", c.Reference)
		if _, set := c.Config["benchmark"]; !set {
			e.kv("benchmark", d.Benchmark)
		}
		for _, k := range slices.Sorted(maps.Keys(c.Config)) {
			e.kv(k, c.Config[k])
		}
	}
	if e.err != nil {
		return e.err
	}
	_, err := io.WriteString(w, e.b.String())
	return err
}

var nameRe = lazy.Regexp(`^[A-Za-z0-9_.-]+$`)

// encoder writes TOML: tables, and values inline.
type encoder struct {
	b   strings.Builder
	err error
}

func (e *encoder) table(name string) {
	if e.b.Len() > 0 {
		e.b.WriteByte('\n')
	}
	fmt.Fprintf(&e.b, "[%s]\n", name)
}

func (e *encoder) arrayTable(name string) {
	if e.b.Len() > 0 {
		e.b.WriteByte('\n')
	}
	fmt.Fprintf(&e.b, "[[%s]]\n", name)
}

// kv writes key = value; an empty string, map or list is left out.
func (e *encoder) kv(k string, v any) {
	switch x := v.(type) {
	case nil:
		return
	case string:
		if x == "" {
			return
		}
	case map[string]any:
		if len(x) == 0 {
			return
		}
	case []string:
		if x == nil {
			return
		}
	}
	e.b.WriteString(key(k))
	e.b.WriteString(" = ")
	e.value(v)
	e.b.WriteByte('\n')
}

func (e *encoder) value(v any) {
	switch x := v.(type) {
	case string:
		e.b.WriteString(quote(x))
	case bool:
		e.b.WriteString(strconv.FormatBool(x))
	case int:
		e.b.WriteString(strconv.Itoa(x))
	case int64:
		e.b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			e.err = fmt.Errorf("importer: %v has no TOML form", x)
			return
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		e.b.WriteString(s)
	case []string:
		e.b.WriteByte('[')
		for i, s := range x {
			if i > 0 {
				e.b.WriteString(", ")
			}
			e.b.WriteString(quote(s))
		}
		e.b.WriteByte(']')
	case []any:
		e.b.WriteByte('[')
		for i, it := range x {
			if i > 0 {
				e.b.WriteString(", ")
			}
			e.value(it)
		}
		e.b.WriteByte(']')
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[k] = v
		}
		e.value(m)
	case map[string]any:
		e.b.WriteString("{ ")
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				e.b.WriteString(", ")
			}
			e.b.WriteString(key(k))
			e.b.WriteString(" = ")
			e.value(x[k])
		}
		e.b.WriteString(" }")
	default:
		e.err = fmt.Errorf("importer: cannot write a %T in TOML", v)
	}
}

var bareKey = lazy.Regexp(`^[A-Za-z0-9_-]+$`)

func key(k string) string {
	if bareKey().MatchString(k) {
		return k
	}
	return quote(k)
}

// quote writes a TOML basic string, escaped as every dataset writer
// escapes (dataset.Quote).
func quote(s string) string { return dataset.Quote(s) }
