package dataset

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/internal/termsafe"
)

// The write side of the dataset file format: the values a dataset file
// holds, and the one encoder of them.

// File is a dataset file as pikit writes one (an import's output, an
// exported case): its [meta], declarative scenarios and cases. Encode
// writes it; Parse reads the file back.
type File struct {
	// Comment is written on top of the file, each of its lines as a TOML
	// comment ("# " and the line, an empty line as "#"), with every
	// character a terminal or an editor could act on shown as an escape
	// (termsafe.Line): a comment has no escapes of its own, and a newline
	// in it must not end the comment and start a table. export-case says
	// there where its cases come from.
	Comment string
	// Benchmark is written into every case that names none (its results'
	// metadata then carries it, and reports add that benchmark's own
	// metrics); pikit import sets it to the importer's name.
	Benchmark string
	Meta      Meta
	Scenarios []Scenario // [scenarios.NAME]
	// ScenarioTables are scenario tables copied as a file spelled them
	// ([scenarios.NAME] decoded: export-case copies a user's), written
	// after Scenarios, their keys sorted, nested tables inline.
	ScenarioTables map[string]map[string]any
	Cases          []FileCase // [[cases]]
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

// FileCase is one [[cases]] table of a File.
type FileCase struct {
	ID          string
	Description string
	Reference   string // where the case comes from in the benchmark
	// Config holds the other keys, as a dataset file spells them
	// ("agents", "attacks", "task", "sink_args", ...).
	Config map[string]any
}

// Encode writes f as a dataset TOML file (see Marshal), after reading the
// text back through Parse, as users' files are read: a dataset that would
// not load is an error naming what failed, and nothing is written. file
// names the dataset in Parse's messages (the path it is written to). The
// dataset as Parse read it is returned, for a caller that checks more than
// that it loads (export-case compares its payloads) or counts its cases.
//
// Encode does not use f once the text is made, so a caller that keeps no
// other reference to it lets its values go while the text is parsed back
// (pikit import: tens of thousands of cases).
func Encode(w io.Writer, file string, f *File) (*Dataset, error) {
	text, err := Marshal(f)
	if err != nil {
		return nil, err
	}
	ds, err := Parse(file, text)
	if err != nil {
		return nil, fmt.Errorf("the dataset as written would not load: %w", err)
	}
	if _, err := w.Write(text); err != nil {
		return nil, err
	}
	return ds, nil
}

// Marshal returns d as a dataset TOML file: its comment, [meta], then
// each scenario, then the cases, every table's keys in a fixed order,
// every string escaped as AppendQuoted escapes it (so no control, bidi or
// invisible character of a benchmark's text reaches the file raw). It is
// the one encoder of the format. It writes nothing and checks nothing:
// Encode writes, after reading the text back; Marshal alone serves a
// caller that only checks a part loads (export-case, case by case).
func Marshal(d *File) ([]byte, error) {
	e := &encoder{}
	e.comment(d.Comment)
	e.table("meta")
	e.kv("name", d.Meta.Name)
	e.kv("description", d.Meta.Description)
	e.kv("reference", d.Meta.Reference)
	for _, sc := range d.Scenarios {
		if !nameRe().MatchString(sc.Name) {
			return nil, fmt.Errorf("scenario %q: a name is letters, digits, _, - and .", sc.Name)
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
	for _, name := range slices.Sorted(maps.Keys(d.ScenarioTables)) {
		if !nameRe().MatchString(name) {
			return nil, fmt.Errorf("scenario %q: a name is letters, digits, _, - and .", name)
		}
		e.table("scenarios." + key(name))
		t := d.ScenarioTables[name]
		for _, k := range slices.Sorted(maps.Keys(t)) {
			e.kv(k, t[k])
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
		return nil, e.err
	}
	return e.b.Bytes(), nil
}

var nameRe = lazy.Regexp(`^[A-Za-z0-9_.-]+$`)

// ValidName reports whether s can name a scenario or a tool in a dataset
// file: letters, digits, _, - and ., at least one.
func ValidName(s string) bool { return nameRe().MatchString(s) }

// encoder writes TOML: tables, and values inline. Its buffer is the text
// Marshal returns, not copied: an import's file is tens of megabytes.
type encoder struct {
	b   bytes.Buffer
	err error
}

// comment writes text as comment lines (see File.Comment).
func (e *encoder) comment(text string) {
	if text == "" {
		return
	}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			e.b.WriteString("#\n")
			continue
		}
		e.b.WriteString("# ")
		e.b.WriteString(termsafe.Line(line))
		e.b.WriteByte('\n')
	}
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
			e.err = fmt.Errorf("dataset: %v has no TOML form", x)
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
		e.err = fmt.Errorf("dataset: cannot write a %T in TOML", v)
	}
}

var bareKey = lazy.Regexp(`^[A-Za-z0-9_-]+$`)

func key(k string) string {
	if bareKey().MatchString(k) {
		return k
	}
	return quote(k)
}

// quote writes a TOML basic string (see AppendQuoted).
func quote(s string) string { return Quote(s) }
