package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/internal/termsafe"
)

// hostileTail is what the test adds to every text of a benchmark's files:
// bidi overrides and isolates, invisible characters (zero width space,
// word joiner, BOM), C0 controls (a terminal escape, NUL, backspace,
// carriage return), C1 controls (NEL, CSI) and DEL.
const hostileTail = " \u202eevil\u202c \u2066x\u2069 zero\u200bwidth\u2060 \ufeff \x1b[31mred \x00nul \x08bs \rcr \u0085nel \u009b \x7f end"

// hostileText reports whether a string is a text a benchmark's author
// wrote (words with spaces), not an id, a name, a choice an importer looks
// up or JSON held in a string.
func hostileText(s string) bool {
	return len(s) >= 24 && strings.Count(s, " ") >= 3 && !strings.HasPrefix(strings.TrimSpace(s), "{") && !strings.HasPrefix(strings.TrimSpace(s), "[")
}

// hostileCopy copies a benchmark's fixture (a file or a directory) to dir,
// adding hostileTail to every text in its JSON, JSONL, YAML and TOML files.
func hostileCopy(t *testing.T, from, dir string) string {
	t.Helper()
	info, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, filepath.Base(from))
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(src) {
		case ".json":
			b = hostileJSON(t, b)
		case ".jsonl":
			var out []byte
			for _, line := range strings.SplitAfter(string(b), "\n") {
				if strings.TrimSpace(line) == "" {
					out = append(out, line...)
					continue
				}
				out = append(append(out, hostileJSON(t, []byte(line))...), '\n')
			}
			b = out
		case ".yaml", ".yml":
			var n yaml.Node
			if err := yaml.Unmarshal(b, &n); err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			hostileYAML(&n)
			if b, err = yaml.Marshal(&n); err != nil {
				t.Fatal(err)
			}
		case ".toml":
			var v any
			if err := toml.Unmarshal(b, &v); err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if b, err = toml.Marshal(hostileValue(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !info.IsDir() {
		copyFile(from, root)
		return root
	}
	err = filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		copyFile(p, filepath.Join(root, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func hostileJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %.80s", err, b)
	}
	out, err := json.Marshal(hostileValue(v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func hostileValue(v any) any {
	switch x := v.(type) {
	case string:
		if hostileText(x) {
			return x + hostileTail
		}
	case []any:
		for i := range x {
			x[i] = hostileValue(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = hostileValue(x[k])
		}
	}
	return v
}

func hostileYAML(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!str" || n.Tag == "") && hostileText(n.Value) {
		n.Value += hostileTail
		n.Style = yaml.DoubleQuotedStyle
	}
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			continue // a key
		}
		hostileYAML(c)
	}
}

// stringsOf collects every string in a value: a dataset file's values as the
// TOML decoder gives them, or a File's.
func stringsOf(v any, out map[string]int) {
	switch x := v.(type) {
	case string:
		out[x]++
	case []string:
		for _, s := range x {
			out[s]++
		}
	case []any:
		for _, e := range x {
			stringsOf(e, out)
		}
	case map[string]any:
		for k, e := range x {
			out[k]++
			stringsOf(e, out)
		}
	case map[string]string:
		for k, e := range x {
			out[k]++
			out[e]++
		}
	}
}

// fileStrings collects the texts of a File that Marshal writes.
func fileStrings(f *dataset.File) map[string]int {
	out := map[string]int{}
	add := func(ss ...string) {
		for _, s := range ss {
			if s != "" {
				out[s]++
			}
		}
	}
	add(f.Meta.Name, f.Meta.Description, f.Meta.Reference)
	for _, sc := range f.Scenarios {
		add(sc.Description, sc.System, sc.UserMessage, sc.Taint.Marker, sc.Taint.Clean)
		for _, sp := range sc.Taint.Also {
			add(sp.Marker, sp.Clean)
		}
		for _, tl := range sc.Tools {
			add(tl.Description, tl.Output, tl.Template)
			for k, v := range tl.Data {
				add(k, v)
			}
		}
	}
	for _, c := range f.Cases {
		add(c.ID, c.Description, c.Reference)
		m := map[string]int{}
		stringsOf(map[string]any(c.Config), m)
		for s, n := range m {
			if s != "" {
				out[s] += n
			}
		}
	}
	return out
}

// loadedAsWritten says where a dataset as dataset.Parse loaded it differs
// from the File written: the meta; each case's id, description, reference
// and every key of its config (compared as JSON, where matrix.Config's
// field names are the file's keys); and each scenario's texts, taint and
// tools, whose outputs are asked of the loaded tools.
func loadedAsWritten(f *dataset.File, ds *dataset.Dataset) error {
	if ds.Name != f.Meta.Name || ds.Description != f.Meta.Description || ds.Reference != f.Meta.Reference {
		return fmt.Errorf("meta read back as %q, %q, %q", ds.Name, ds.Description, ds.Reference)
	}
	if len(ds.Cases) != len(f.Cases) {
		return fmt.Errorf("%d cases read back, %d written", len(ds.Cases), len(f.Cases))
	}
	asJSON := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			return err
		}
		return out
	}
	scenarios := map[string]*agent.Scenario{}
	for i, want := range f.Cases {
		got := ds.Cases[i]
		if got.ID != want.ID || got.Description != want.Description || got.Reference != want.Reference {
			return fmt.Errorf("case %d: read back as %q, %q, %q; written %q, %q, %q", i, got.ID, got.Description, got.Reference, want.ID, want.Description, want.Reference)
		}
		cfg := asJSON(got.Config).(map[string]any)
		keys := want.Config
		if _, set := keys["benchmark"]; !set && f.Benchmark != "" {
			keys = map[string]any{"benchmark": f.Benchmark}
			for k, v := range want.Config {
				keys[k] = v
			}
		}
		for k, v := range keys {
			if g, w := cfg[k], asJSON(v); !reflect.DeepEqual(g, w) {
				return fmt.Errorf("case %q: %s read back as %#v, written %#v", want.ID, k, g, w)
			}
		}
		for name, sc := range got.Config.Scenarios {
			scenarios[name] = sc
		}
	}
	for _, want := range f.Scenarios {
		got := scenarios[want.Name]
		if got == nil {
			continue // no case names it
		}
		mode := want.Taint.Mode
		if mode == "" {
			mode = agent.TaintReplace
		}
		var also []dataset.Spot
		for _, sp := range got.TaintAlso {
			also = append(also, dataset.Spot{Tool: sp.Tool, Marker: sp.Marker, Clean: sp.Clean})
		}
		if got.Description != want.Description || got.System != want.System || got.UserMessage != want.UserMessage || got.Channel != want.Channel ||
			got.TaintPoint != want.Taint.Tool || got.TaintCall != want.Taint.Call || got.TaintMode != mode ||
			got.TaintMarker != want.Taint.Marker || got.TaintClean != want.Taint.Clean ||
			!reflect.DeepEqual(also, want.Taint.Also) || !reflect.DeepEqual(asJSON(got.TaintArgs), asJSON(want.Taint.Args)) {
			return fmt.Errorf("scenario %q read back as %+v", want.Name, got)
		}
		if len(got.Tools) != len(want.Tools) {
			return fmt.Errorf("scenario %q: %d tools read back, %d written", want.Name, len(got.Tools), len(want.Tools))
		}
		for i, wt := range want.Tools {
			gt := got.Tools[i]
			if gt.Name != wt.Name || gt.Description != wt.Description || gt.Sink != wt.Sink {
				return fmt.Errorf("scenario %q: tool %q read back as %q, %q", want.Name, wt.Name, gt.Name, gt.Description)
			}
			// The tool's outputs, asked of the loaded tool: a template
			// with each placeholder given as itself, each datum by its
			// key, a fixed output (or a sink's confirmation) as it is.
			outputs := map[string]map[string]any{}
			switch {
			case wt.Template != "":
				args := map[string]any{}
				for _, p := range gt.Params {
					args[p.Name] = "{" + p.Name + "}"
				}
				outputs[wt.Template] = args
			case wt.ByArg != "":
				for k, v := range wt.Data {
					outputs[v] = map[string]any{wt.ByArg: k}
				}
			case wt.Output != "":
				outputs[wt.Output] = nil
			}
			for out, args := range outputs {
				if g := gt.Output(args); g != out {
					return fmt.Errorf("scenario %q: tool %q answers %q, written %q", want.Name, wt.Name, g, out)
				}
			}
		}
	}
	return nil
}

// TestHostileImportsRoundTrip (issue 24): every importer, given its
// fixture with bidi, invisible and control characters added to every text,
// produces a dataset file (dataset.Encode, as pikit import writes it) in
// which no such character is written raw, that loads through the parser
// users' files go through, and whose every value reads back as the
// importer gave it.
func TestHostileImportsRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, fixture string }{
		{"agentdojo", "testdata/agentdojo"},
		{"bipia", "testdata/bipia"},
		{"injecagent", "testdata/injecagent"},
		{"llmail", "testdata/llmail/data"},
		{"mcptox", "testdata/mcptox/response_all.json"},
		{"spikee", "testdata/spikee/seeds-mini"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imp, err := New(tc.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, err := imp(hostileCopy(t, tc.fixture, t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			want := fileStrings(&d.File)
			hostile := 0
			for s := range want {
				if strings.Contains(s, "\u202e") {
					hostile++
				}
			}
			if hostile == 0 {
				t.Fatal("no text of the import holds the hostile characters: the test exercises nothing")
			}
			var b bytes.Buffer
			ds, err := dataset.Encode(&b, tc.name+".toml", &d.File)
			if err != nil {
				t.Fatalf("the written file does not load: %v", err)
			}
			text := b.Bytes()
			for i, r := range string(text) {
				if r != '\n' && termsafe.Unsafe(r) {
					t.Fatalf("byte %d: %U written raw", i, r)
				}
			}
			if err := loadedAsWritten(&d.File, ds); err != nil {
				t.Fatal(err)
			}
			// Every text, including those in tables the loader keeps as
			// JSON (tool parameters), is in the file as it was given.
			var tree map[string]any
			if err := toml.Unmarshal(text, &tree); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			stringsOf(tree, got)
			for s := range want {
				if got[s] == 0 {
					t.Fatalf("%q was written but reads back otherwise", s)
				}
			}
			t.Logf("%d cases, %d texts (%d hostile) read back as written", len(d.Cases), len(want), hostile)
		})
	}
}
