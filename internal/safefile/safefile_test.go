package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCreate(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		plant   func(t *testing.T, at string) // what is at the name before
		replace bool
		wantErr bool
	}{
		{name: "new", plant: func(*testing.T, string) {}},
		{name: "new, replacing", plant: func(*testing.T, string) {}, replace: true},
		{name: "symlink to a victim", plant: func(t *testing.T, at string) { must(t, os.Symlink(victim, at)) }, wantErr: true},
		{name: "symlink to a victim, replacing", plant: func(t *testing.T, at string) { must(t, os.Symlink(victim, at)) }, replace: true, wantErr: true},
		{name: "dangling symlink", plant: func(t *testing.T, at string) { must(t, os.Symlink(victim+".new", at)) }, replace: true, wantErr: true},
		{name: "hard link to a victim, replacing", plant: func(t *testing.T, at string) { must(t, os.Link(victim, at)) }, replace: true, wantErr: true},
		{name: "an earlier run's file", plant: func(t *testing.T, at string) { must(t, os.WriteFile(at, []byte("old"), 0o644)) }, wantErr: true},
		{name: "an earlier run's file, replacing", plant: func(t *testing.T, at string) { must(t, os.WriteFile(at, []byte("old"), 0o644)) }, replace: true},
		{name: "a directory, replacing", plant: func(t *testing.T, at string) { must(t, os.Mkdir(at, 0o755)) }, replace: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			d, err := Open(dir, tt.replace)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			tt.plant(t, filepath.Join(dir, "KEY.har"))
			err = d.WriteFile("KEY.har", []byte("new"), 0o644)
			if got, _ := os.ReadFile(victim); string(got) != "keep me" {
				t.Fatalf("the victim now holds %q", got)
			}
			if tt.wantErr {
				if err == nil {
					t.Fatal("written, want refused")
				}
				if !errors.Is(err, ErrExists) {
					t.Errorf("error %v, want ErrExists", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "KEY.har")); string(got) != "new" {
				t.Errorf("file holds %q, want new", got)
			}
		})
	}
}

func TestCreateRefusesPaths(t *testing.T) {
	d, err := Open(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"", ".", "..", "../x", "a/b", "/etc/passwd"} {
		if f, err := d.Create(name, 0o644); err == nil {
			f.Close()
			t.Errorf("Create(%q) succeeded", name)
		}
	}
}

func TestLinks(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	must(t, os.WriteFile(a, nil, 0o644))
	must(t, os.Link(a, filepath.Join(dir, "b")))
	fi, err := os.Lstat(a)
	must(t, err)
	if n, ok := Links(fi); ok && n != 2 {
		t.Errorf("Links = %d, want 2", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
