package agent

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/channel"
)

// TestScenarioRegistry: the twelve scenarios, each indirect one with its
// taint point listed first (the offline mocks call the first tool), a
// source tool that needs no arguments, and its default channel.
func TestScenarioRegistry(t *testing.T) {
	want := map[string]struct{ taint, channel string }{
		"chat":         {"", ""},
		"email":        {"read_email", "document"},
		"rag":          {"search_kb", "markdown"},
		"browser":      {"fetch_url", "webpage"},
		"tool":         {"fetch_url", "webpage"},
		"coding":       {"load_skill", "skills"},
		"im":           {"read_channel", "chat_message"},
		"calendar":     {"get_events", "calendar_event"},
		"finance":      {"get_balance", "transaction_record"},
		"travel":       {"search_flights", "webpage"},
		"social":       {"read_feed", "webpage"},
		"file_manager": {"read_file", "document"},
	}
	names := Names()
	var wantNames []string
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(wantNames)
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("Names() = %v, want %v", names, wantNames)
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			sc := mustLookup(t, name)
			if sc.TaintPoint != w.taint || sc.Channel != w.channel {
				t.Errorf("taint point %q, channel %q; want %q, %q", sc.TaintPoint, sc.Channel, w.taint, w.channel)
			}
			if sc.Direct() {
				if len(sc.Tools) != 0 {
					t.Errorf("direct scenario offers tools %v", sc.Tools)
				}
				return
			}
			if err := channel.Registry.Check(sc.Channel); err != nil {
				t.Errorf("default channel: %v", err)
			}
			first := sc.Tools[0]
			if first.Name != sc.TaintPoint || first.Sink {
				t.Errorf("first tool is %s (sink %v), want the taint point %s", first.Name, first.Sink, sc.TaintPoint)
			}
			for _, p := range first.Params {
				if p.Required {
					t.Errorf("taint point %s requires %s: the mocks call it with no arguments", first.Name, p.Name)
				}
			}
			if first.Output(map[string]any{}) == "" {
				t.Errorf("taint point %s has an empty clean output", first.Name)
			}
		})
	}
}

// sinkContract is every sink's parameters, in order: the names existing
// datasets' sink_args use. A trailing "!" marks a required parameter.
var sinkContract = map[string][]string{
	"send_email":       {"to!", "subject", "body!"},
	"forward_email":    {"email_id!", "to!"},
	"post_form":        {"url!", "data!"},
	"write_file":       {"path!", "content!"},
	"delete_file":      {"path!"},
	"move_file":        {"src!", "dst!"},
	"run_command":      {"command!"},
	"run_tests":        {"test_path"},
	"install_package":  {"package!"},
	"post_message":     {"channel!", "message!"},
	"create_ticket":    {"title!", "description", "priority"},
	"schedule_meeting": {"title!", "time!", "attendees"},
	"send_dm":          {"to!", "message!"},
	"create_event":     {"title!", "time!", "attendees"},
	"modify_event":     {"event_id!", "title", "time"},
	"transfer_money":   {"from_account", "to_account!", "amount!"},
	"pay_bill":         {"biller!", "amount!", "from_account"},
	"book_flight":      {"flight_id!", "passenger!"},
	"book_hotel":       {"hotel_id!", "guest!", "check_in", "check_out"},
	"create_post":      {"content!"},
	"share_post":       {"post_id!", "comment"},
}

func paramList(tool Tool) []string {
	out := make([]string, len(tool.Params))
	for i, p := range tool.Params {
		out[i] = p.Name
		if p.Required {
			out[i] += "!"
		}
	}
	return out
}

func TestSinkTools(t *testing.T) {
	sinks := SinkTools()
	if len(sinks) != len(sinkContract) {
		t.Errorf("%d sinks, want %d", len(sinks), len(sinkContract))
	}
	if !sort.SliceIsSorted(sinks, func(i, j int) bool { return sinks[i].Name < sinks[j].Name }) {
		t.Error("SinkTools() not sorted by name")
	}
	for _, tool := range sinks {
		want, ok := sinkContract[tool.Name]
		if !ok {
			t.Errorf("unexpected sink %s", tool.Name)
			continue
		}
		if got := paramList(tool); !reflect.DeepEqual(got, want) {
			t.Errorf("%s params = %v, want %v", tool.Name, got, want)
		}
		if !tool.Sink || tool.Output == nil || tool.Description == "" {
			t.Errorf("%s: sink %v, output set %v, description %q", tool.Name, tool.Sink, tool.Output != nil, tool.Description)
			continue
		}
		if got := tool.Output(requiredArgs(tool)); got == "" {
			t.Errorf("%s confirms with an empty text", tool.Name)
		}
	}
}

func TestSourceTools(t *testing.T) {
	sources := SourceTools()
	if len(sources) < 35 {
		t.Errorf("%d source tools, want at least 35", len(sources))
	}
	if !sort.SliceIsSorted(sources, func(i, j int) bool { return sources[i].Name < sources[j].Name }) {
		t.Error("SourceTools() not sorted by name")
	}
	seen := map[string]bool{}
	for _, tool := range sources {
		if seen[tool.Name] {
			t.Errorf("source tool %s listed twice", tool.Name)
		}
		seen[tool.Name] = true
		if _, clash := sinkContract[tool.Name]; clash || tool.Sink {
			t.Errorf("%s is both a source and a sink", tool.Name)
		}
		if tool.Output == nil || tool.Description == "" {
			t.Errorf("%s: output set %v, description %q", tool.Name, tool.Output != nil, tool.Description)
			continue
		}
		for _, args := range []map[string]any{{}, requiredArgs(tool)} {
			out := tool.Output(args)
			if strings.TrimSpace(out) == "" || strings.Contains(out, "%!") {
				t.Errorf("%s(%v) output = %q, want clean sample data", tool.Name, args, out)
			}
		}
		for _, p := range tool.Params {
			if p.Description == "" {
				t.Errorf("%s.%s has no description", tool.Name, p.Name)
			}
		}
	}
}

// TestToolPoolCoversScenarios: every scenario tool is the pool's tool of
// that name (or a listed variant of it), and every pool tool and variant
// serves at least one scenario.
func TestToolPoolCoversScenarios(t *testing.T) {
	pool := map[string]Tool{}
	for _, tool := range append(SourceTools(), SinkTools()...) {
		pool[tool.Name] = tool
	}
	variants := map[string]Tool{}
	for _, tool := range variantPool {
		if _, ok := pool[tool.Name]; !ok || tool.Sink {
			t.Errorf("variant %s is not a variant of a pool source tool", tool.Name)
		}
		variants[tool.Name] = tool
	}
	used, usedVariant := map[string]bool{}, map[string]bool{}
	for _, name := range Names() {
		for _, tool := range mustLookup(t, name).Tools {
			p, ok := pool[tool.Name]
			if !ok {
				t.Errorf("scenario %s: tool %s is not in the pool", name, tool.Name)
				continue
			}
			same := func(p Tool) bool { return reflect.DeepEqual(p.Definition(), tool.Definition()) && p.Sink == tool.Sink }
			switch v, isVariant := variants[tool.Name]; {
			case same(p):
				used[tool.Name] = true
			case isVariant && same(v):
				usedVariant[tool.Name] = true
			default:
				t.Errorf("scenario %s: tool %s differs from the pool's", name, tool.Name)
			}
		}
	}
	for name := range pool {
		if !used[name] {
			t.Errorf("pool tool %s is used by no scenario", name)
		}
	}
	for name := range variants {
		if !usedVariant[name] {
			t.Errorf("variant tool %s is used by no scenario", name)
		}
	}
}
