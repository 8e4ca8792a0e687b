package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version, Commit and Date are set at build time (make build, make
// release) with -ldflags "-X github.com/pikit-go/pikit/internal/cli.Version=v1.2.3"
// and likewise Commit and Date. Otherwise the build's own stamps are used:
// the module version (go install …@v1.2.3) and the VCS revision (go build
// in a git checkout).
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// buildInfo is what `pikit version` says of this binary.
type buildInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	BuildDate  string `json:"build_date,omitempty"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
}

func version() string { return readBuildInfo().Version }

// readBuildInfo gathers the version, commit and date from the linker's
// values first, then from the build's stamps.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: Version, Commit: Commit, BuildDate: Date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Commit == "" {
					b.Commit = s.Value
				}
			case "vcs.time":
				b.CommitTime = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Commit == "" {
		b.Commit = pseudoCommit(b.Version)
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	return b
}

// pseudoCommit is the commit a pseudo-version names
// (v0.0.0-20261208010212-458e5a7c1f2b: go install …@COMMIT), "" for any
// other version.
func pseudoCommit(v string) string {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 || strings.Count(v, "-") < 2 {
		return ""
	}
	for _, c := range v[i+1:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return v[i+1:]
}

// write prints the build info for a person: the version line, then the
// commit and dates that are known.
func (b buildInfo) write(w io.Writer) error {
	var s strings.Builder
	fmt.Fprintf(&s, "pikit %s (%s, %s)\n", b.Version, b.Go, b.Platform)
	commit := b.Commit
	if commit == "" {
		commit = "unknown (built without VCS information: go build -buildvcs=false, or go run)"
	} else if b.Modified {
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(&s, "commit:      %s\n", commit)
	if b.CommitTime != "" {
		fmt.Fprintf(&s, "commit time: %s\n", b.CommitTime)
	}
	if b.BuildDate != "" {
		fmt.Fprintf(&s, "built:       %s\n", b.BuildDate)
	}
	_, err := io.WriteString(w, s.String())
	return err
}

func newVersionCmd(streams IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the pikit version, commit and build date",
		Long: `Print pikit's version, the commit it was built from, when that commit was
made and when the binary was built (the last when the build said: make
build and make release do), the Go version and the platform.`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			b := readBuildInfo()
			if asJSON {
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(b)
			}
			return b.write(streams.Out)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print it as a JSON object")
	return cmd
}
