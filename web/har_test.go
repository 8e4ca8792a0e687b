package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/internal/safefile"
)

// TestHARRedactsCredentials: request headers named like credentials
// (x-api-key, api-key, Authorization, Cookie, *-Token) and headers whose
// value is shaped like one (a JWT, a DSN with a password) keep their name
// in the HAR file, never their value; other headers are kept as sent.
func TestHARRedactsCredentials(t *testing.T) {
	srv, hs := newServer(t)
	s := open(t, srv, "har-redact", "shop", "", false)
	secrets := map[string]string{
		"X-Api-Key":           "abc123-key-by-name",
		"Api-Key":             "def456-key-by-name",
		"Authorization":       "Basic dXNlcjpwYXNz",
		"Proxy-Authorization": "Basic cHJveHk6cGFzcw==",
		"Cookie":              "session=opaque-cookie-value",
		"X-Auth-Token":        "opaque-token-value",
		"X-Client-Secret":     "opaque-secret-value",
		"X-Forwarded-Jwt":     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"X-Upstream":          "postgres://app:hunter2@db.internal:5432/orders",
		"X-Debug":             "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
	}
	req, _ := http.NewRequest(http.MethodGet, hs.URL+s.Base(), nil)
	for k, v := range secrets {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept-Language", "en-GB")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	har, err := s.HAR()
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range secrets {
		if strings.Contains(string(har), v) {
			t.Errorf("the HAR file keeps %s's value %q", name, v)
		}
	}
	var h harLog
	if err := json.Unmarshal(har, &h); err != nil || len(h.Log.Entries) != 1 {
		t.Fatalf("HAR: %v, %d entries", err, len(h.Log.Entries))
	}
	got := map[string]string{}
	for _, nv := range h.Log.Entries[0].Request.Headers {
		got[http.CanonicalHeaderKey(nv.Name)] = nv.Value
	}
	for name := range secrets {
		if got[name] != redacted {
			t.Errorf("%s: %q, want %q", name, got[name], redacted)
		}
	}
	if got["Accept-Language"] != "en-GB" {
		t.Errorf("Accept-Language: %q, want it kept", got["Accept-Language"])
	}
}

// TestHARFiles: each cell's HAR file is created new in the --har
// directory. A symbolic link or a hard link planted under a cell's name
// (KEY.har, which whoever wrote the config can compute) is never written
// through; an earlier file is refused, but for a resumed run, which
// replaces its own.
func TestHARFiles(t *testing.T) {
	tests := []struct {
		name    string
		plant   func(t *testing.T, at, victim string)
		resume  bool
		wantErr bool
	}{
		{name: "a new file", plant: func(*testing.T, string, string) {}},
		{name: "a planted symlink to a victim", plant: func(t *testing.T, at, victim string) { must(t, os.Symlink(victim, at)) }, wantErr: true},
		{name: "a planted symlink to a victim, resumed", plant: func(t *testing.T, at, victim string) { must(t, os.Symlink(victim, at)) }, resume: true, wantErr: true},
		{name: "a planted hard link to a victim", plant: func(t *testing.T, at, victim string) { must(t, os.Link(victim, at)) }, wantErr: true},
		{name: "a planted hard link to a victim, resumed", plant: func(t *testing.T, at, victim string) { must(t, os.Link(victim, at)) }, resume: true, wantErr: true},
		{name: "an earlier run's file", plant: func(t *testing.T, at, _ string) { must(t, os.WriteFile(at, []byte("old"), 0o644)) }, wantErr: true},
		{name: "the run's own file, resumed", plant: func(t *testing.T, at, _ string) { must(t, os.WriteFile(at, []byte("old"), 0o644)) }, resume: true},
	}
	srv, hs := newServer(t)
	s := open(t, srv, "har-files", "shop", "", false)
	get(t, hs.URL+s.Base())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			victimDir, dir := t.TempDir(), filepath.Join(t.TempDir(), "har")
			victim := filepath.Join(victimDir, "victim")
			must(t, os.WriteFile(victim, []byte("keep me"), 0o600))
			h, err := OpenHAR(dir, tt.resume)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			at := filepath.Join(dir, "KEY.har")
			tt.plant(t, at, victim)
			err = h.write(s, "KEY")
			if got, _ := os.ReadFile(victim); string(got) != "keep me" {
				t.Fatalf("the victim now holds %q", got)
			}
			if tt.wantErr {
				if !errors.Is(err, safefile.ErrExists) || !strings.Contains(err.Error(), at) {
					t.Fatalf("error %v, want one naming %s that says it exists", err, at)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(at)
			if err != nil || !strings.Contains(string(b), `"version": "1.2"`) {
				t.Errorf("KEY.har: %v\n%s", err, b)
			}
		})
	}
	var none *HARFiles
	if err := none.write(s, "KEY"); err != nil {
		t.Errorf("no --har: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
