package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plantVictim writes a file outside the --har directory that a planted
// link points at.
func plantVictim(t *testing.T, name string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), name, "keep me")
}

// checkVictims fails the test if a victim was written through.
func checkVictims(t *testing.T, victims ...string) {
	t.Helper()
	for _, v := range victims {
		if b, err := os.ReadFile(v); err != nil || string(b) != "keep me" {
			t.Errorf("%s was written through: it now holds %d bytes (%v)", v, len(b), err)
		}
	}
}

// TestWebRunHARFiles: pikit web run --har DIR writes each cell's KEY.har
// new. In a second run into the same DIR, and in a resumed run, a symlink
// or a hard link planted under a cell's name (the key is computable from
// the config) is refused and the file it points at is left alone; a
// resumed run replaces its own earlier file.
func TestWebRunHARFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", webExperiment)
	out, harDir := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "har")
	webRun := func(extra ...string) runResult {
		args := append([]string{"web", "run", "--config", cfg, "-q", "--har", harDir}, extra...)
		return run(t, append(args, webHelperAgent(t)...)...)
	}
	if r := webRun("-o", out); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	res := readJSONL(t, out)
	if len(res) != 6 {
		t.Fatalf("%d results", len(res))
	}
	key := func(i int) string { return res[i]["key"].(string) }
	har := func(i int) string { return filepath.Join(harDir, key(i)+".har") }

	// Not resumed: every name is taken, by the first run's files.
	again := filepath.Join(dir, "again.jsonl")
	if r := webRun("-o", again); r.code != 1 {
		t.Errorf("a second run into the same --har: exit %d, want 1: %s", r.code, r.err)
	}
	for _, m := range readJSONL(t, again) {
		if e := fmt.Sprint(m["error"]); !strings.Contains(e, "already exists") || !strings.Contains(e, harDir) {
			t.Errorf("%v/%v: error %q, want the HAR file named as already there", m["attack"], m["channel"], e)
		}
	}

	// Resumed: the last three cells run again; one name is a symlink to a
	// victim, one a hard link to another, one the first run's own file.
	symVictim, hardVictim := plantVictim(t, "sym-victim"), plantVictim(t, "hard-victim")
	noErr(t, os.Remove(har(3)))
	noErr(t, os.Symlink(symVictim, har(3)))
	noErr(t, os.Remove(har(4)))
	noErr(t, os.Link(hardVictim, har(4)))
	own, err := os.ReadFile(har(5))
	noErr(t, err)
	var kept []byte
	for _, m := range res[:3] {
		b, err := os.ReadFile(out)
		noErr(t, err)
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if strings.Contains(line, `"key":"`+m["key"].(string)+`"`) {
				kept = append(kept, line...)
			}
		}
	}
	noErr(t, os.WriteFile(out, kept, 0o644))
	r := webRun("-o", out, "--resume")
	checkVictims(t, symVictim, hardVictim)
	if r.code != 1 {
		t.Errorf("resume: exit %d, want 1 (two cells refused): %s", r.code, r.err)
	}
	errs := map[string]string{}
	for _, m := range readJSONL(t, out) {
		errs[m["key"].(string)] = fmt.Sprint(m["error"])
	}
	for i, want := range map[int]string{3: "not a regular file", 4: "a hard link"} {
		if !strings.Contains(errs[key(i)], want) {
			t.Errorf("cell %d: error %q, want %q", i, errs[key(i)], want)
		}
	}
	if now, err := os.ReadFile(har(5)); err != nil || string(now) == string(own) || !strings.Contains(string(now), `"version": "1.2"`) {
		t.Errorf("the resumed cell's own HAR file was not replaced: %v", err)
	}
	if e := errs[key(5)]; e != "<nil>" {
		t.Errorf("the resumed cell: error %q", e)
	}
}

// TestWebServeHARFiles: pikit web serve --har DIR refuses a symlink or
// hard link planted under a cell's name once the agent has learnt the
// key (POST /pikit/sessions answers it), and writes the other cells'.
func TestWebServeHARFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", strings.Replace(webExperiment, `attacks = ["none", "naive"]`, `attacks = ["naive"]`, 1))
	out, harDir := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "har")
	base, done := startWebServe(t, "--config", cfg, "-q", "-o", out, "--har", harDir)
	symVictim, hardVictim := plantVictim(t, "sym-victim"), plantVictim(t, "hard-victim")
	plants := []func(at string){
		func(at string) { noErr(t, os.Symlink(symVictim, at)) },
		func(at string) { noErr(t, os.Link(hardVictim, at)) },
		func(string) {},
	}
	keys := make([]string, len(plants))
	for i, plant := range plants {
		s := openWebSession(t, base)
		keys[i] = s.Key
		plant(filepath.Join(harDir, s.Key+".har"))
		resp, err := http.Get(s.StartURL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = http.Post(base+"/pikit/sessions/"+s.ID+"/end", "text/plain", strings.NewReader("done"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	select {
	case r := <-done:
		if r.code != 1 {
			t.Errorf("exit %d, want 1 (two cells refused)", r.code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pikit web serve did not stop after its last cell")
	}
	checkVictims(t, symVictim, hardVictim)
	errs := map[string]string{}
	for _, m := range readJSONL(t, out) {
		errs[m["key"].(string)] = fmt.Sprint(m["error"])
	}
	for i, want := range []string{"already exists", "already exists", "<nil>"} {
		if !strings.Contains(errs[keys[i]], want) {
			t.Errorf("session %d: error %q, want %q", i, errs[keys[i]], want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(harDir, keys[2]+".har")); err != nil || !strings.Contains(string(b), `"version": "1.2"`) {
		t.Errorf("the clean cell's HAR file: %v", err)
	}
}

// noErr fails the test at once on err.
func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
