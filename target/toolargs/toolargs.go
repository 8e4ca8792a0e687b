// Package toolargs reads what a tool's JSON Schema asks for and makes up
// arguments for it: the parameters, their kind told by name, a plausible
// value for one nothing gives a value, and a value's conversion to the
// parameter's JSON type. The offline mock models call tools with them.
package toolargs

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Param is one parameter of a tool's schema.
type Param struct {
	Name, Type, Desc string // Type is the JSON Schema type, "string" when it gives none
	Required         bool
}

// Params reads the parameters of a JSON Schema object, sorted by class
// (see Class), then by name.
func Params(schema map[string]any) []Param {
	props, _ := schema["properties"].(map[string]any)
	req := map[string]bool{}
	switch r := schema["required"].(type) {
	case []string:
		for _, n := range r {
			req[n] = true
		}
	case []any:
		for _, n := range r {
			if s, ok := n.(string); ok {
				req[s] = true
			}
		}
	}
	var out []Param
	for name, raw := range props {
		if name == "" {
			continue
		}
		pr := Param{Name: name, Type: "string", Required: req[name]}
		if m, ok := raw.(map[string]any); ok {
			if t, ok := m["type"].(string); ok {
				pr.Type = t
			}
			pr.Desc, _ = m["description"].(string)
		}
		out = append(out, pr)
	}
	sort.Slice(out, func(i, j int) bool {
		ci, cj := ClassOf(out[i].Name), ClassOf(out[j].Name)
		if ci != cj {
			return ci < cj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Class is a kind of parameter, told by its name.
type Class int

// Parameter classes, in the order their values are looked for: specific
// shapes (ids, addresses, amounts) before free text, so free text does not
// take a value meant for another parameter.
const (
	ID Class = iota
	URL
	Recipient
	Attendees
	Channel
	Account
	Amount
	Time
	Path
	Package
	Command
	Priority
	Title
	Person
	Place
	Text
	Other
)

// ClassOf sorts a parameter into a class by its name.
func ClassOf(name string) Class {
	n := strings.ToLower(name)
	switch {
	case n == "id" || strings.HasSuffix(n, "_id"):
		return ID
	case n == "url" || n == "link" || n == "endpoint" || n == "href" || strings.HasSuffix(n, "_url"):
		return URL
	case n == "attendees" || n == "participants" || n == "invitees" || n == "recipients" || n == "guests":
		return Attendees
	case n == "to" || n == "recipient" || n == "email" || n == "cc" || n == "bcc" || n == "user" || n == "handle" || n == "address":
		return Recipient
	case n == "channel" || n == "room":
		return Channel
	case strings.Contains(n, "account") || n == "iban":
		return Account
	case n == "amount" || n == "price" || n == "sum" || n == "total":
		return Amount
	case n == "time" || n == "date" || n == "when" || n == "start" || n == "end" || n == "deadline" || n == "due" ||
		strings.HasPrefix(n, "check_") || strings.HasSuffix(n, "_time") || strings.HasSuffix(n, "_date"):
		return Time
	case n == "path" || n == "src" || n == "dst" || n == "source" || n == "file" || n == "filename" || n == "dir" ||
		n == "directory" || n == "folder" || strings.HasSuffix(n, "_path") || strings.HasSuffix(n, "_file"):
		return Path
	case n == "package" || n == "packages" || n == "module" || n == "library":
		return Package
	case n == "command" || n == "cmd" || n == "script":
		return Command
	case n == "priority" || n == "severity":
		return Priority
	case n == "title" || n == "subject" || n == "name" || n == "topic" || n == "link_text" || n == "label":
		return Title
	case n == "passenger" || n == "guest" || n == "biller" || n == "payee" || n == "person" || n == "contact" || n == "author" || n == "owner":
		return Person
	case n == "origin" || n == "destination" || n == "city" || n == "location" || n == "place":
		return Place
	case n == "content" || n == "message" || n == "body" || n == "text" || n == "comment" || n == "description" ||
		n == "data" || n == "note" || n == "notes" || n == "query" || n == "pattern" || n == "reason" || n == "memo" || n == "caption":
		return Text
	}
	return Other
}

// Convert gives a value the parameter's JSON type; ok is false when an
// optional value does not fit.
func Convert(v, typ string, required bool) (any, bool) {
	f, err := strconv.ParseFloat(strings.NewReplacer(",", "", "$", "", "€", "", "£", "", " ", "").Replace(v), 64)
	finite := err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 1<<53
	switch typ {
	case "integer":
		if finite {
			return math.Trunc(f), true
		}
		return float64(0), required
	case "number":
		if finite {
			return f, true
		}
		return float64(0), required
	case "boolean":
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "on", "1":
			return true, true
		case "false", "no", "off", "0":
			return false, true
		}
		return false, required
	case "array":
		// One value where the schema wants a list: a list of it.
		if v == "" {
			return []any{}, required
		}
		return []any{v}, true
	case "object":
		return map[string]any{}, required
	}
	return v, true
}

// Marshal encodes tool arguments as a JSON object.
func Marshal(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// Placeholder is a plausible value for a required parameter nothing gives
// a value: by its type, else by its class; a free-text parameter gets text
// ("as requested" when text is empty), cut to 300 characters.
func Placeholder(pr Param, text string) string {
	n := strings.ToLower(pr.Name)
	switch pr.Type {
	case "integer", "number":
		return "1"
	case "boolean":
		return "true"
	}
	switch ClassOf(pr.Name) {
	case ID:
		return "1"
	case URL:
		return "https://example.com/"
	case Recipient, Attendees:
		if strings.Contains(strings.ToLower(pr.Desc), "handle") {
			return "@teammate"
		}
		return "recipient@example.com"
	case Channel:
		return "#general"
	case Account:
		return "000000000"
	case Amount:
		return "100.00"
	case Time:
		if strings.HasPrefix(n, "check_out") || strings.HasPrefix(n, "end") {
			return "2025-11-12"
		}
		if n == "date" || strings.HasPrefix(n, "check_") {
			return "2025-11-10"
		}
		return "2025-11-10T09:00"
	case Path:
		if n == "dst" || strings.HasPrefix(n, "dest") {
			return "notes-copy.txt"
		}
		return "notes.txt"
	case Package:
		return "requests"
	case Command:
		return "echo done"
	case Priority:
		return "normal"
	case Title:
		return "Follow-up"
	case Person:
		return "the user"
	case Place:
		return "NYC"
	case Text:
		s := strings.TrimSpace(text)
		if utf8.RuneCountInString(s) > 300 {
			s = string([]rune(s)[:300])
		}
		if s == "" {
			return "as requested"
		}
		return s
	}
	return "as requested"
}

// FromSchema returns arguments taken from a tool's schema alone, as a JSON
// object: each required parameter gets its Placeholder, the optional ones
// none. No text is read, so no injection can choose them.
func FromSchema(schema map[string]any) string {
	args := map[string]any{}
	for _, pr := range Params(schema) {
		if !pr.Required {
			continue
		}
		if v, ok := Convert(Placeholder(pr, ""), pr.Type, true); ok {
			args[pr.Name] = v
		}
	}
	return Marshal(args)
}
