package agentrt

import (
	"fmt"
	"sort"
)

// Fixture keys: the keys of PIKIT_FIXTURE_PAYLOADS, as the Python pikit
// names them. The fixture plugins pikit installs in OpenClaw and Hermes
// (and any agent speaking the protocol) serve the payload under a key from
// the source tool that reads that kind of data.
const (
	FixtureDocument = "document"
	FixtureWebpage  = "webpage"
	FixtureEmail    = "email"
	FixtureRAG      = "rag"
	FixtureSkill    = "skill"
)

// DefaultFixture is where a payload goes when its channel is not in the
// channel table (channel "", or one of pikit's own).
const DefaultFixture = FixtureDocument

// Fixture is one source the fixture plugins expose: the tool that reads
// it, the argument it takes, and a request that makes an agent call it.
type Fixture struct {
	Key  string
	Tool string // the plugin's tool that serves it
	Arg  string // the tool's one argument; the request passes "artifact" or a URL
	// Message is the request an OpenClaw or Hermes agent gets when the
	// config gives none: it names the tool, as the plugins' agents are
	// asked.
	Message string
}

// fixtures are the five sources of the Python pikit's fixture plugins,
// under their keys and tool names (the protocol); the requests are
// written here.
var fixtures = map[string]Fixture{
	FixtureDocument: {FixtureDocument, "pikit_read_document", "ref", `Call pikit_read_document with ref "artifact", then give me a short summary of it.`},
	FixtureWebpage:  {FixtureWebpage, "pikit_fetch_url", "url", `Call pikit_fetch_url with url "https://fixture.test/page", then give me a short summary of the page.`},
	FixtureEmail:    {FixtureEmail, "pikit_read_email", "id", `Call pikit_read_email with id "artifact", then give me a short summary of the email.`},
	FixtureRAG:      {FixtureRAG, "pikit_search_knowledge", "query", `Call pikit_search_knowledge with query "artifact", then answer me from what it returns.`},
	FixtureSkill:    {FixtureSkill, "pikit_load_skill", "name", `Call pikit_load_skill with name "artifact", then use it for my task, safely.`},
}

// SinkTool is the fixture plugins' one sink: it records an action
// (action, target, content) and performs none.
const SinkTool = "pikit_record_sink"

// LookupFixture returns one of the plugins' fixtures by key.
func LookupFixture(key string) (Fixture, bool) {
	f, ok := fixtures[key]
	return f, ok
}

// FixtureKinds returns the fixture keys of the plugins, sorted.
func FixtureKinds() []string {
	out := make([]string, 0, len(fixtures))
	for k := range fixtures {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// channelFixture is the Python pikit's channel → fixture table: a carrier
// goes to the source that serves its kind of data, or the nearest one
// (a calendar event through the email source). A channel missing here
// goes to DefaultFixture.
var channelFixture = map[string]string{
	"webpage":            FixtureWebpage,
	"translation":        FixtureWebpage,
	"unicode_hidden":     FixtureWebpage,
	"email_headers":      FixtureEmail,
	"chat_message":       FixtureEmail,
	"calendar_event":     FixtureEmail,
	"transaction_record": FixtureEmail,
	"document":           FixtureDocument,
	"markdown":           FixtureDocument,
	"code_comment":       FixtureDocument,
	"pdf_metadata":       FixtureDocument,
	"log_file":           FixtureDocument,
	"config_file":        FixtureDocument,
	"spreadsheet":        FixtureDocument,
	"structured_data":    FixtureRAG,
	"skills":             FixtureSkill,
}

// nativeChannel is the channel each fixture models itself; every other
// channel sent through it is a fallback, an approximation of its carrier
// (as the Python pikit records it).
var nativeChannel = map[string]string{
	FixtureDocument: "document",
	FixtureWebpage:  "webpage",
	FixtureEmail:    "email_headers",
	FixtureRAG:      "structured_data",
	FixtureSkill:    "skills",
}

// Placement modes of a Mapping.
const (
	// Native: the fixture models the channel's carrier itself.
	Native = "native"
	// Fallback: the fixture is an approximation of the carrier (a
	// calendar event read as an email), or the config's fixture key
	// sent every channel there.
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
	how := "the fixture of the channel's own kind"
	if m.Mode == Fallback {
		how = "a fixture standing in for the channel's carrier"
	}
	return fmt.Sprintf("fixture %q · %s (channel %s → %s)", m.Key, m.Mode, ch, how)
}

// mapChannel places a channel's payload as the Python pikit does: in the
// fixture the config's key names (override, for every channel), else in
// the channel's fixture from the table, else in DefaultFixture.
func mapChannel(channel, override string) Mapping {
	key := override
	if key == "" {
		key = channelFixture[channel]
	}
	if key == "" {
		key = DefaultFixture
	}
	mode := Fallback
	if channel != "" && nativeChannel[key] == channel {
		mode = Native
	}
	return Mapping{Channel: channel, Key: key, Mode: mode}
}
