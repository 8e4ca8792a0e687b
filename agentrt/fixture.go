package agentrt

import (
	"fmt"
	"slices"
	"sort"
)

// Fixture kinds: the keys of PIKIT_FIXTURE_PAYLOADS. An agent's plugin
// serves the payload under a key from the tool that reads that kind of
// data (an inbox for "email", a fetched page for "web").
const (
	FixtureEmail    = "email"
	FixtureWeb      = "web"
	FixtureDocument = "document"
	FixtureCalendar = "calendar"
	FixtureChat     = "chat"
	FixtureFile     = "file"
	FixtureSkill    = "skill"
)

// DefaultFixture is where a payload goes when its channel has no fixture
// of its own the agent reads (channel "", unicode_hidden), unless the
// config's fixture key names another.
const DefaultFixture = FixtureDocument

// nativeFixture maps each channel to the fixture kind its carrier is: an
// email's headers belong in an inbox, an HTML page in a fetched page.
// The Python pikit's table is not available to us; this is our reading,
// and a channel missing here (or whose kind the agent does not read, see
// runtime_options.fixtures) falls back to the runtime's default fixture.
var nativeFixture = map[string]string{
	"email_headers":      FixtureEmail,
	"webpage":            FixtureWeb,
	"markdown":           FixtureDocument,
	"document":           FixtureDocument,
	"pdf_metadata":       FixtureDocument,
	"translation":        FixtureDocument,
	"transaction_record": FixtureDocument,
	"calendar_event":     FixtureCalendar,
	"chat_message":       FixtureChat,
	"code_comment":       FixtureFile,
	"config_file":        FixtureFile,
	"log_file":           FixtureFile,
	"spreadsheet":        FixtureFile,
	"structured_data":    FixtureFile,
	"skills":             FixtureSkill,
}

// FixtureKinds returns the fixture kinds pikit maps channels to, sorted.
func FixtureKinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range nativeFixture {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Placement modes of a Mapping.
const (
	// Native: the payload went in the fixture of the channel's own kind.
	Native = "native"
	// Fallback: the channel has no fixture the agent reads (or is ""), so
	// the payload went in the runtime's default fixture.
	Fallback = "fallback"
)

// Mapping records where a cell's payload was handed to the agent.
type Mapping struct {
	Channel string `json:"channel"` // the cell's channel, "" for the payload alone
	Key     string `json:"key"`     // the fixture key that received it
	Mode    string `json:"mode"`    // Native or Fallback
}

// String describes the mapping in a line.
func (m Mapping) String() string {
	ch := m.Channel
	if ch == "" {
		ch = `""`
	}
	how := "the channel's own fixture"
	if m.Mode == Fallback {
		how = "the runtime's default fixture: the channel has none the agent reads"
	}
	return fmt.Sprintf("fixture %q · %s (channel %s → %s)", m.Key, m.Mode, ch, how)
}

// mapChannel places a channel's payload: in its native fixture when the
// agent reads that kind (reads nil: every kind), else in def.
func mapChannel(channel, def string, reads []string) Mapping {
	if k, ok := nativeFixture[channel]; ok && (reads == nil || slices.Contains(reads, k)) {
		return Mapping{Channel: channel, Key: k, Mode: Native}
	}
	return Mapping{Channel: channel, Key: def, Mode: Fallback}
}
