package mcpserve

import (
	"errors"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/matrix"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name, toml string
		want       Options
		err        string // "" for none
	}{
		{"no section", `agents = ["email"]`, Options{Poison: PoisonResult}, ""},
		{"all keys", "[mcp]\npoison = \"description\"\npoison_tool = \"send_email\"\npoison_param = \"to\"\n",
			Options{Poison: PoisonDescription, Tool: "send_email", Param: "to"}, ""},
		{"rug pull, flag spelling", "[mcp]\npoison = \"rug-pull\"\n", Options{Poison: PoisonRugPull}, ""},
		{"unknown key", "agents = [\"email\"]\n[mcp]\npoison_tol = \"x\"\n", Options{},
			`exp.toml:3: mcp.poison_tol: unknown key in [mcp] (did you mean poison_tool or poison?); valid keys: poison, poison_param, poison_tool`},
		{"bad mode", "[mcp]\n\npoison = \"descripton\"\n", Options{},
			`exp.toml:3: mcp.poison: unknown poison mode "descripton" (did you mean description?); known: result, description, rug_pull`},
		{"not a string", "[mcp]\npoison_tool = 3\n", Options{}, `exp.toml:2: mcp.poison_tool: want a string, got`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := matrix.Parse("exp.toml", []byte(tt.toml))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseOptions(&cfg)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) || !errors.Is(err, matrix.ErrConfig) {
					t.Fatalf("error %v, want %q (a config error)", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	email, _ := agent.Lookup("email")
	chat, _ := agent.Lookup("chat")
	tests := []struct {
		name string
		sc   *agent.Scenario
		o    Options
		want Options
		err  string
	}{
		{"defaults to the taint point", email, Options{}, Options{Poison: PoisonResult, Tool: "read_email"}, ""},
		{"chat has no tools", chat, Options{}, Options{}, "agent chat has no tools to serve over MCP; tool agents: browser"},
		{"unknown tool", email, Options{Tool: "read_mail"}, Options{}, `poison_tool: agent email has no tool "read_mail" (did you mean read_email or send_email?); its tools: read_email, list_emails`},
		{"a sink's result", email, Options{Tool: "send_email"}, Options{}, "send_email is a sink"},
		{"a sink's description", email, Options{Poison: PoisonDescription, Tool: "send_email"}, Options{Poison: PoisonDescription, Tool: "send_email"}, ""},
		{"param in result mode", email, Options{Param: "email_id"}, Options{}, "poison_param: applies to"},
		{"unknown param", email, Options{Poison: PoisonRugPull, Param: "id"}, Options{}, `poison_param: read_email has no parameter "id"`},
		{"tool without params", email, Options{Poison: PoisonRugPull, Tool: "list_emails", Param: "x"}, Options{}, "list_emails takes no parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.o.Resolve(tt.sc)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
