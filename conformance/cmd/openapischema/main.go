// Command openapischema cuts one request schema out of OpenAI's published
// OpenAPI description (github.com/openai/openai-openapi, openapi.json) as
// a JSON Schema (draft 2020-12) that the conformance tests validate pikit's
// requests against: the named schema and every schema it reaches, their
// prose (descriptions, titles, examples) left out, references rewritten
// to $defs.
//
//	git -C openai-openapi show HEAD:openapi.json > /tmp/openapi.json
//	go run ./cmd/openapischema -schema CreateChatCompletionRequest /tmp/openapi.json > testdata/openai/chat-request.schema.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

const refPrefix = "#/components/schemas/"

func main() {
	name := flag.String("schema", "CreateChatCompletionRequest", "the schema under components/schemas to cut out")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: openapischema [-schema NAME] openapi.json")
		os.Exit(2)
	}
	if err := run(*name, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "openapischema:", err)
		os.Exit(1)
	}
}

func run(name, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	defs := map[string]any{}
	todo := []string{name}
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if _, done := defs[n]; done {
			continue
		}
		s, ok := doc.Components.Schemas[n]
		if !ok {
			return fmt.Errorf("no schema %q in %s", n, path)
		}
		defs[n] = strip(s, &todo)
	}
	out := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$ref":    "#/$defs/" + name,
		"$defs":   defs,
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(out) // maps are written in key order: a stable file
}

// strip drops prose and vendor keys from a schema, rewrites its
// references to $defs and queues the schemas they name.
func strip(v any, todo *[]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch {
			case k == "description" || k == "title" || k == "example" || k == "examples" || strings.HasPrefix(k, "x-"):
				continue
			case k == "$ref":
				ref, _ := e.(string)
				n, ok := strings.CutPrefix(ref, refPrefix)
				if !ok {
					continue
				}
				*todo = append(*todo, n)
				out[k] = "#/$defs/" + n
			case k == "properties" || k == "patternProperties" || k == "$defs":
				// Names here are property names, not keywords: keep each.
				props := map[string]any{}
				if m, ok := e.(map[string]any); ok {
					for pk, pv := range m {
						props[pk] = strip(pv, todo)
					}
				}
				out[k] = props
			default:
				out[k] = strip(e, todo)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = strip(e, todo)
		}
		return out
	}
	return v
}
