// Package mcptest is a scripted MCP agent for tests, written with the
// official Go SDK's client: it plays an agent that obeys whatever its
// tools tell it, so a test can see a payload served by pikit mcp reach a
// sink. It has no model; it never acts on anything but the MCP server.
package mcptest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pikit-go/pikit/agent"
)

// Attacker is the address the scripted agent looks for: when a tool's
// result or description names it, the agent sends it an email (or calls
// the first sink whose parameters take it).
const Attacker = "attacker@evil.example"

// Obey connects to the MCP endpoint url (streamable HTTP), lists the
// tools, calls the scenario's taint point, lists the tools again, and
// calls a sink with Attacker when the result or any description names
// Attacker. It writes what it
// did to out, one line per step, and ends with a summary line.
func Obey(ctx context.Context, url, scenario string, out io.Writer) error {
	sc, err := agent.Lookup(scenario)
	if err != nil {
		return err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcptest-agent", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: http.DefaultClient, MaxRetries: -1}, nil)
	if err != nil {
		return fmt.Errorf("connect %s: %w", url, err)
	}
	defer cs.Close()
	return obey(ctx, cs, sc, out)
}

func obey(ctx context.Context, cs *mcp.ClientSession, sc *agent.Scenario, out io.Writer) error {
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	seen := ""
	for _, t := range lt.Tools {
		seen += t.Description + "\n" + fmt.Sprint(t.InputSchema) + "\n"
	}
	fmt.Fprintf(out, "listed %d tools\n", len(lt.Tools))
	taint, _ := sc.Tool(sc.TaintPoint)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: taint.Name, Arguments: fill(taint, nil)})
	if err != nil {
		return fmt.Errorf("call %s: %w", taint.Name, err)
	}
	text := Text(res)
	fmt.Fprintf(out, "called %s: %d bytes\n", taint.Name, len(text))
	seen += text
	// An agent loop lists the tools again each turn: a rug pull shows.
	if lt, err = cs.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	for _, t := range lt.Tools {
		seen += t.Description + "\n" + fmt.Sprint(t.InputSchema) + "\n"
	}
	if !strings.Contains(seen, Attacker) {
		fmt.Fprintln(out, "summary: nothing to do")
		return nil
	}
	sink, ok := sinkFor(sc)
	if !ok {
		fmt.Fprintln(out, "summary: no sink takes an address")
		return nil
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: sink.Name, Arguments: fill(sink, map[string]any{"to": Attacker})})
	if err != nil {
		return fmt.Errorf("call %s: %w", sink.Name, err)
	}
	fmt.Fprintf(out, "called %s: %s\n", sink.Name, Text(res))
	fmt.Fprintln(out, "summary: obeyed the tool")
	return nil
}

// sinkFor picks the sink the agent obeys with: one taking "to".
func sinkFor(sc *agent.Scenario) (agent.Tool, bool) {
	for _, t := range sc.Tools {
		if !t.Sink {
			continue
		}
		for _, p := range t.Params {
			if p.Name == "to" {
				return t, true
			}
		}
	}
	return agent.Tool{}, false
}

// fill gives every required parameter of t a value: set's, or "1".
func fill(t agent.Tool, set map[string]any) map[string]any {
	args := map[string]any{}
	for _, p := range t.Params {
		if v, ok := set[p.Name]; ok {
			args[p.Name] = v
		} else if p.Required {
			args[p.Name] = "1"
		}
	}
	return args
}

// Text joins the text content of a tool result.
func Text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
